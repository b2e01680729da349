"""Training image references (pure): which registry, repository and tag or digest an ECR image
names, and whether it is one of the AWS Deep Learning Containers."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Registries of the AWS Deep Learning Containers (github.com/aws/deep-learning-containers,
# available_images.md): their images are public to every account and are not looked up.
DLC_REGISTRY_ACCOUNTS = frozenset(
    {
        "763104351884",
        "871362719292",
        "364406365360",
        "217643126080",
        "727897471807",
        "626614931356",
        "692866216735",
        "503227376785",
        "914824155844",
        "446045086412",
        "780543022126",
        "007439368137",
        "380420809688",
    }
)
_IMAGE = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/"
    r"(?P<repo>[^:@]+)(:(?P<tag>[^@]+)|@(?P<digest>sha256:[a-f0-9]{64}))$"
)


@dataclass(frozen=True, slots=True)
class ImageReference:
    account: str
    region: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def is_deep_learning_container(self) -> bool:
        return self.account in DLC_REGISTRY_ACCOUNTS


def parse_image(image: str) -> ImageReference | None:
    """`<account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>|@sha256:<digest>`, or None."""
    match = _IMAGE.match(image)
    if not match:
        return None
    return ImageReference(match["account"], match["region"], match["repo"], match["tag"], match["digest"])
