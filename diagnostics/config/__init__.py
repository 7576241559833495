"""The run configuration, its settings, the GLUE task schema, hosted limits, workshop scenarios."""
