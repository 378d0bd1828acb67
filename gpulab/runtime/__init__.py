"""Running builds: devices, loaded modules, launches, arrays and streams."""
