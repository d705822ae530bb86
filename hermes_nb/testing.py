"""pytest plugin (entry point ``pytest11: hermes_nb``): fixtures for hermes_nb users.

Fixtures are added by the emulator work (``hermes_emulator``); importing this
module must stay cheap and must not start anything.
"""
