"""`DistributionOptions`: where and how a run trains (TPU, strategy, optimizer, precision, XLA)."""

import dataclasses


@dataclasses.dataclass(kw_only=True)
class DistributionOptions:
    """The options every training run shares; the runners' options dataclasses extend it."""

    tpu: str = None
    tpu_zone: str = None
    gcp_project: str = None
    distribution_strategy: str = "auto"
    optimizer: str = "adamw"
    mixed_precision: str = "float32"
    jit_compile: bool = False
    gradient_accumulation_steps: int = 1
    random_seed: int = 12345

    @classmethod
    def field_names(cls):
        return [field.name for field in dataclasses.fields(cls)]
