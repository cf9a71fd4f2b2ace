"""The models the worker answers itself: the bundled local model (`local_model`) and the scripted model."""
