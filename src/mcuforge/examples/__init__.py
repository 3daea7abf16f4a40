"""Built-in examples (``mcuforge demo``)."""
