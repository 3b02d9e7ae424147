"""cpsvm: cutting-plane SVM training with SVMlight/SVMstruct/libocas-style tools."""

__version__ = "0.1.0"
