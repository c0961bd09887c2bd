"""Collectives on the backend fabric (nccl-tests style), the fabric's health under the inventory, and the published
AllGather figure: their run kinds."""
