# Importing this file takes a while, so that the e2e test can cancel "FX: Trace Workspace"
# while it runs. Editors never open it; only the workspace-wide trace imports it.
import time

from torch import nn

time.sleep(20)


class Identity(nn.Module):
    def forward(self, x):
        return x
