"""Inputs read from the module's layers: its first layer, the layers a traced graph feeds each
argument to and the sizes they leave free, a layer that only rearranges worked back, and the
signal a waveform model takes."""
