"""Live push: run and cluster state over WebSockets (Channels + channels_redis), binary frames, REST snapshots."""
