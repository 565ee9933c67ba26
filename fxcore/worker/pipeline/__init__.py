"""The pipeline that leads each class of a file through the worker's stages (``job``): built,
the instance that fits kept (``fitting_instance``), its example inputs decided and captured in
each mode (``capturing``) and its verdict made (``verdict``), then the instances of workspace
classes its instance holds (``submodule_instances``)."""
