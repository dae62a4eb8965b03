"""Follow one press of "Start the race" from the button to the model: drive the race chapter through
Streamlit's AppTest, press the button, and print the Python stack at a call of the model (the
compiled pass's kernel call, or the Python pass's `_layers` where none is built), the deepest such stack of the
press: the frames from the page script down to the model, the files they pass through, and every
project file whose code the press ran.

    .venv/bin/python scripts/bench/race_press_frames.py
"""
import sys
import threading
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from specdec_core.model import kernel, python_pass  # noqa: E402

PAGE = "chapters/race.py"


def main() -> None:
    # the model: the compiled passes where they are built, else the Python pass's GPT-2 layers
    entries = [(kernel, "pass_rows"), (python_pass.GPT2Pass, "_layers")]
    originals, seen = {entry: getattr(*entry) for entry in entries}, []

    def hooked(cls, name):
        original = originals[cls, name]

        def model(*args, **kwargs):
            stack = [f for f in traceback.extract_stack() if f.filename != __file__]  # this script's wrappers left out
            if not seen or len(stack) > len(seen[0][0]):
                seen[:] = [(stack, f"{getattr(cls, '__name__', cls)}.{name}", getattr(cls, "__module__", None) or cls.__name__)]
            return original(*args, **kwargs)
        return model

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params = {"max_new": "8", "temp": "0", "gamma": "3"}
    at.run()
    at.switch_page(PAGE).run()  # the page drawn, before the press
    assert not at.exception, at.exception
    touched: set[str] = set()
    ours = lambda name: name.startswith(str(ROOT)) and "/.venv/" not in name and not name.endswith(__file__)

    def profile(frame, event, _arg):
        if event == "call" and ours(frame.f_code.co_filename):
            touched.add(frame.f_code.co_filename)

    for cls, name in entries:
        setattr(cls, name, hooked(cls, name))
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        at.button(key="race_run").click().run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        for (cls, name), original in originals.items():
            setattr(cls, name, original)
    assert not at.exception, at.exception
    assert seen, "the press reached no model"
    stack, endpoint, module = seen[0]
    model_file = module.replace(".", "/") + ".py"
    first = next(i for i, f in enumerate(stack) if f.filename.endswith(PAGE))
    path = stack[first:]
    rel = lambda f: (f.filename.split("site-packages/")[-1] if "site-packages/" in f.filename
                     else str(Path(f.filename).relative_to(ROOT)))
    print(f"From the button in {PAGE} to the model ({endpoint}):")
    for depth, f in enumerate(path, 1):
        print(f"  {depth:2d}  {rel(f)}:{f.lineno}  {f.name}")
    print(f"  {len(path) + 1:2d}  {model_file}  {endpoint}")
    files = list(dict.fromkeys(rel(f) for f in path)) + [model_file]
    print(f"{len(path) + 1} frames, {len(set(files))} distinct files:")
    for f in dict.fromkeys(files):
        print(f"  {f}")
    project = sorted(str(Path(f).relative_to(ROOT)) for f in touched if "/tests/" not in f)
    print(f"The press ran code in {len(project)} project files:")
    for f in project:
        print(f"  {f}")


if __name__ == "__main__":
    main()
