"""Running builds: loaded modules, launches, arrays and streams."""
