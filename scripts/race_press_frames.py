"""Follow one press of "Start the race" from the button to the model: drive the race chapter through
Streamlit's AppTest, press the button, and print the Python stack at a call of the GPT-2 layers (the
pass's `_layers`), the deepest such stack of the press: the frames from the page script down to the
model, the files they pass through, and every project file whose code the press ran.

    .venv/bin/python scripts/race_press_frames.py
"""
import sys
import threading
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from specdec_core import passes  # noqa: E402
from tests.app.helpers import page  # noqa: E402

PAGE = "chapters/race.py"


def main() -> None:
    pass_class = next(c for c in vars(passes).values() if isinstance(c, type) and "_layers" in vars(c))
    original, seen = pass_class._layers, []

    def layers(self, x, attend):
        stack = traceback.extract_stack()[:-1]  # the wrapper's own frame left out
        if not seen or len(stack) > len(seen[0]):
            seen[:] = [stack]
        return original(self, x, attend)

    at = page(PAGE, max_new=8, temp=0, gamma=3)  # the page drawn, before the press
    touched: set[str] = set()
    ours = lambda name: name.startswith(str(ROOT)) and "/.venv/" not in name and not name.endswith(__file__)

    def profile(frame, event, _arg):
        if event == "call" and ours(frame.f_code.co_filename):
            touched.add(frame.f_code.co_filename)

    pass_class._layers = layers
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        at.button(key="race_run").click().run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        pass_class._layers = original
    assert not at.exception, at.exception
    assert seen, "the press reached no GPT-2 layer"
    stack = seen[0]
    first = next(i for i, f in enumerate(stack) if f.filename.endswith(PAGE))
    path = stack[first:]
    rel = lambda f: (f.filename.split("site-packages/")[-1] if "site-packages/" in f.filename
                     else str(Path(f.filename).relative_to(ROOT)))
    print(f"From the button in {PAGE} to a GPT-2 layer ({pass_class.__name__}._layers):")
    for depth, f in enumerate(path, 1):
        print(f"  {depth:2d}  {rel(f)}:{f.lineno}  {f.name}")
    print(f"  {len(path) + 1:2d}  specdec_core/passes.py  {pass_class.__name__}._layers")
    files = list(dict.fromkeys(rel(f) for f in path)) + ["specdec_core/passes.py"]
    print(f"{len(path) + 1} frames, {len(set(files))} distinct files:")
    for f in dict.fromkeys(files):
        print(f"  {f}")
    project = sorted(str(Path(f).relative_to(ROOT)) for f in touched if "/tests/" not in f)
    print(f"The press ran code in {len(project)} project files:")
    for f in project:
        print(f"  {f}")


if __name__ == "__main__":
    main()
