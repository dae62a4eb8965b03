"""A throwaway PostgreSQL server: moved to classroom/tools/pg.py (shipped, so scripts need not import
tests); kept here for the tests and scripts that still import it from here."""
from classroom.tools.pg import PostgresMissing, bin_dir, free_port, temporary_postgres  # noqa: F401
