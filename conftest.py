# The project's own tests drive the plugin through pytester (pytest_plugins may only be set here, in the rootdir conftest).
pytest_plugins = ["pytester"]
