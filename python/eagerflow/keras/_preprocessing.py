"""Keras 3's preprocessing layers written in Python, registered under Keras' class names so that
load_model rebuilds them without custom_objects."""
from ._prep_encode import CategoryEncoding, Discretization, Hashing
from ._prep_image import (CenterCrop, RandomBrightness, RandomContrast, RandomCrop, RandomFlip, RandomRotation,
                          RandomTranslation, RandomZoom, Resizing)
from ._prep_lookup import IntegerLookup, StringLookup
from ._prep_text import TextVectorization
from ._prep_color import (AutoContrast, RandomColorDegeneration, RandomGrayscale, RandomHue, RandomInvert,
                          RandomPosterization, RandomSaturation, RandomSharpness, Solarization)
from ._prep_mix import CutMix, MixUp, RandomColorJitter, RandomGaussianBlur
from ._prep_perspective import RandomPerspective
from ._prep_erasing import RandomErasing
from ._prep_equalize import Equalization
from ._prep_boxes import MaxNumBoundingBoxes
from ._prep_randaugment import AugMix, RandAugment
from ._prep_elastic import RandomElasticTransform
from ._prep_clahe import ContrastLimitedAdaptiveHistogramEqualization
from ._prep_cross import HashedCrossing
from ._prep_shear import RandomShear
from ._layers_pipeline import Pipeline

LAYERS = [CategoryEncoding, CenterCrop, Discretization, Hashing, IntegerLookup, RandomBrightness, RandomContrast,
          RandomCrop, RandomFlip, RandomRotation, RandomTranslation, RandomZoom, Resizing, StringLookup,
          TextVectorization, AutoContrast, RandomColorDegeneration, RandomGrayscale, RandomHue, RandomInvert,
          RandomPosterization, RandomSaturation, RandomSharpness, Solarization, MixUp, RandomColorJitter,
          RandomGaussianBlur, RandomShear, CutMix, RandomPerspective, RandomErasing, Equalization, MaxNumBoundingBoxes, RandAugment, AugMix,
          RandomElasticTransform, ContrastLimitedAdaptiveHistogramEqualization, HashedCrossing]


def _register_all():
    from .saving import _register
    for cls in LAYERS:
        _register(cls.__name__, cls)


_register_all()
