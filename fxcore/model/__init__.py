"""The data every stage shares: jobs, results, tensor specs, capture modes, and how far an instance
stands for the real model. Plain dataclasses, no torch."""
