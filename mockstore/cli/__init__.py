"""The ``mockstore`` command: one module per command, each with its parser, examples and exit codes.

``main`` builds the parser from the command modules and runs the one named;
``args`` holds the argument types and exit statuses every command shares,
``logs`` the log formats, ``serving`` what ``serve`` and ``record`` share (the
serving options, running uvicorn until a signal). Nothing below this package
imports it.
"""
