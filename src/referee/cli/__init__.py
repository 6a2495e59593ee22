"""The command line: a thin layer over the library; nothing in the library imports it."""
