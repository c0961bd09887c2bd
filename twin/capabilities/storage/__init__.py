"""Storage and checkpoints: the checkpoint and storage fan-out run kinds and the Storage page."""
