"""The target's features as a session sees them: one row per committed token but the last."""
import torch


class FeatureLog:
    """Features (E,) of the committed tokens, in order, as the generation loop hands them over."""

    def __init__(self, width: int, kind: str, device: torch.device):
        self.width, self.kind = width, kind
        self.rows = torch.zeros(0, width, device=device)  # (count, E)

    @property
    def count(self) -> int:
        return self.rows.shape[0]

    def add(self, features: torch.Tensor) -> None:
        features = features.detach().float().reshape(-1, features.shape[-1])
        if features.shape[-1] != self.width:
            raise ValueError(f"the {self.kind} heads read features of width {self.width}, this target hands "
                             f"{features.shape[-1]}: heads only draft for the target they were trained on")
        self.rows = torch.cat([self.rows, features.to(self.rows.device)])

    def last(self) -> torch.Tensor:
        return self.rows[-1]

    def check(self, context: list[int]) -> None:
        """The invariant of the protocol: features of every committed token but the last."""
        if self.count != len(context) - 1:
            raise ValueError(f"the {self.kind} drafter has the target's features of {self.count} tokens for a "
                             f"context of {len(context)}: it reads the target's features, so it needs a "
                             "generation loop that hands them over (drafter.reads_target)")
