"""libexperiment for Python: feature flags and experiments decided in-process by libexperiment.so.

    import experiment
    with experiment.Client(datafile=experiment.demo_datafile()) as client:   # or your project's datafile
        user = client.create_user_context("user-123", {"country": "NL", "age": 31})
        decision = user.decide("free_shipping")
        print(decision.enabled, decision.variation_key, decision.variables)

The shared library is found through the environment variable EXPERIMENT_LIBRARY, a copy inside this
package, the repository's .build/release directory, or the system library path (in that order).
"""

from ._native import library_path
from .client import Client, library_version, validate_datafile
from .callbacks import DeliveryResult
from .demo import demo_datafile
from .decision import DecideOption, Decision, Event
from .sigma import UserExperiment
from .segments import SegmentOption
from .user_context import OptimizelyDecisionContext, OptimizelyForcedDecision, UserContext, UserDecision
from .errors import (
    BufferTooSmallError,
    WaitTimeoutError,
    TagInUseError,
    TypeMismatchError,
    QueueFullError,
    StoreError,
    ODPNotEnabledError,
    InvalidUserIdError,
    FetchFailedError,
    NotFoundError,
    DeliveryFailedError,
    ClosedError,
    Error,
    InternalError,
    InvalidArgumentError,
    InvalidDatafileError,
    InvalidEventTagsError,
    InvalidJSONError,
    InvalidOptionError,
    InvalidUTF8Error,
    NotAllocatedError,
    NotReadyError,
    NotTargetedError,
    TooDeepError,
    TooLargeError,
    UnknownEventError,
    UnknownExperimentError,
    UnknownFlagError,
    UnknownVariationError,
    UnsupportedTypeError,
    UnsupportedVersionError,
)

__version__ = "0.1.0"

__all__ = [
    "UserContext", "UserDecision", "OptimizelyDecisionContext", "OptimizelyForcedDecision",
    "SegmentOption",
    "__version__",
    "library_version",
    "library_path",
    "validate_datafile",
    "demo_datafile",
    "Client",
    "Decision",
    "UserExperiment",
    "DecideOption",
    "Event",
    "Error",
    "InvalidArgumentError",
    "UnsupportedTypeError",
    "InvalidJSONError",
    "InvalidOptionError",
    "InvalidDatafileError",
    "UnsupportedVersionError",
    "NotReadyError",
    "UnknownFlagError",
    "UnknownExperimentError",
    "UnknownEventError",
    "UnknownVariationError",
    "NotTargetedError",
    "NotAllocatedError",
    "InvalidUTF8Error",
    "TooLargeError",
    "TooDeepError",
    "InvalidEventTagsError",
    "ClosedError",
    "WaitTimeoutError",
    "TagInUseError",
    "TypeMismatchError",
    "QueueFullError",
    "StoreError",
    "ODPNotEnabledError",
    "InvalidUserIdError",
    "FetchFailedError",
    "NotFoundError",
    "DeliveryFailedError",
    "DeliveryResult",
    "BufferTooSmallError",
    "InternalError",
]
