# Two commands on a fresh machine:  make run  (the app on the bundled pair)  and  make test.
PY := .venv/bin/python
PORT ?= 8501

.venv/ready: requirements.txt requirements-train.txt
	python3 -m venv .venv
	.venv/bin/pip install --quiet --upgrade pip
	.venv/bin/pip install --quiet -r requirements.txt
	.venv/bin/pip install --quiet --no-deps -r requirements-train.txt
	touch .venv/ready

# The compiled pass (specdec_core/model/gpt2_pass.cpp), built once on this machine before anything runs, so
# no visitor and no test waits for the compiler; where it cannot be built the passes run in Python.
.venv/kernels: .venv/ready specdec_core/model/gpt2_pass.cpp
	$(PY) -m specdec_core.model
	touch .venv/kernels

# As lean as the classroom command: .streamlit/config.toml switches the file watcher off.
# ui/server/launch.py is `streamlit run app.py` after importing torch and the core, so the first visitor does not wait.
run: .venv/kernels
	$(PY) -m ui.server.launch --server.port $(PORT)

# For developing the app: reload and rerun when a source file is saved (the watcher costs CPU).
dev: .venv/kernels
	$(PY) -m ui.server.launch --server.port $(PORT) --server.fileWatcherType auto --server.runOnSave true

test: .venv/kernels
	scripts/ensure_chromium.sh
	scripts/ensure_postgres.sh
	scripts/ensure_nginx.sh
	$(PY) -m pytest -q

# The core, app and class-store tests without the browser and the slow statistical/training ones (a few minutes less).
test-fast: .venv/kernels
	$(PY) -m pytest -q -m "not browser and not slow" tests/core tests/app tests/classroom

lint: .venv/ready
	$(PY) -m ruff check .

# Real-browser screenshots of every chapter into docs/screenshots/ (for the README).
screenshots: .venv/ready
	scripts/ensure_chromium.sh
	scripts/refresh_screenshots.sh

.PHONY: run dev test test-fast lint screenshots
