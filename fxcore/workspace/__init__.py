"""Reading the workspace: where files live, which classes a file defines, configuration, builders,
notebooks, suppression comments, and safe file access. No user code runs here."""
