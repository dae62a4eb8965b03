"""The app served as `make run` serves it: moved to classroom/tools/serve.py (shipped, so scripts need not
import tests); kept here for the tests and scripts outside class mode that still import it from here."""
from classroom.tools.serve import (  # noqa: F401
    CHROMIUM,
    CHROMIUM_ARGS,
    IDLE,
    RUN_NUMBER_JS,
    SHUTDOWN_TIMEOUT_S,
    START_TIMEOUT_S,
    Server,
    ServerDidNotStart,
    free_port,
    run_number,
    wait_idle,
)
