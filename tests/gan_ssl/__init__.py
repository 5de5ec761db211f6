from torch import Tensor

from genfeat.tasks.image_classification import SemiSupervisedImageClassification


def image_errors(x_valid: Tensor, y_valid: Tensor, x_test: Tensor, y_test: Tensor):
    """The task `fit_gan_ssl` selects on (valid errors) and counts test errors with, as the recipe builds it."""
    return SemiSupervisedImageClassification({"valid": {"x": x_valid, "y": y_valid},
                                              "test": {"x": x_test, "y": y_test}})
