"""Build the compiled pass now (make does, before the app or the tests start), and say so.

    python -m specdec_core.model
"""
import sys
import time

from .kernel import load, module_name, reason

start = time.perf_counter()
module = load()
if module is None:
    print(f"compiled passes: none ({reason()})")
    sys.exit(0)  # the Python passes serve: not an error
print(f"compiled passes {module_name()}: ready in {time.perf_counter() - start:.1f} s")
