"""The images the real node runs, built with buildah on a Python base made with debootstrap,
cached per machine by a digest of their inputs: the webhook's and the controller's from the
project's unmodified Dockerfiles, the training example's, the pod sandbox, and extra images of
third-party components."""
