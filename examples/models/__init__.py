"""Small, realistic models: some trace with torch.fx, some do not."""
