"""What the instance price table covers, against botocore's SageMaker model: run it after a
botocore upgrade or a price refresh (docs/teams/manifests.md, "Instance types and prices").

    .venv/bin/python scripts/price_table.py            # coverage and the families without prices
    .venv/bin/python scripts/price_table.py --unpriced # every valid training type without a price
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

from spotline.core.spec import catalog


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--unpriced", action="store_true", help="list every valid training type without a price")
    args = parser.parse_args()
    valid = catalog.training_instance_type_names()
    tabled = set(catalog.tabled_instance_type_names())
    stale = sorted(tabled - set(valid))
    priced = {name for name in tabled if (known := catalog.known_facts(name)) and known.usd_per_hour is not None}
    by_family: dict[str, list[str]] = defaultdict(list)
    for name in valid:
        by_family[catalog.family_of(name)].append(name)
    if args.unpriced:
        print("\n".join(name for name in valid if name not in priced))
        return 0
    hardware = {name for name in tabled if (known := catalog.known_facts(name)) and known.memory_gib is not None}
    print(
        f"{len(valid)} training instance types in botocore's SageMaker model; {len(priced & set(valid))} priced, "
        f"{len(hardware & set(valid))} with hardware facts"
    )
    print(f"price region {catalog.price_region()}")
    for family, names in sorted(by_family.items()):
        count = sum(1 for name in names if name in priced)
        print(f"  {family:<12} {count:>2} of {len(names):>2} priced")
    if stale:
        print(f"in the table but not valid training types (remove them): {', '.join(stale)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
