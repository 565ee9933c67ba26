"""Inputs the user or the code gives, tried before anything is guessed: an example beside the
model, the calls of the class in the workspace's tests and examples, the shape ``forward``
documents, and what a built parent passes its submodules."""
