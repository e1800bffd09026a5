"""Which scenarios share a boot. Every run of every scenario asked for is a Unit; units whose boot_key is equal
(scenario.py: the same guests, devices, segment and server arguments, doorbell mode included) run one after another
in one boot of their guests, in the order they were asked for, except that a unit marked `last` (it kills a server
or a guest, or resets the device) ends its boot (a second one gets a boot of its own) and a unit marked `alone` has
a boot to itself. Boots run in the order of their first unit."""
from dataclasses import dataclass, field


@dataclass
class Unit:
    """One run of one scenario: tag = the name, with the run's label when the scenario has several runs."""
    scenario: object
    run: object

    @property
    def name(self):
        return self.scenario.name

    @property
    def tag(self):
        return "%s-%s" % (self.name, self.run.label) if self.run.label else self.name


@dataclass
class BootPlan:
    units: list = field(default_factory=list)

    @property
    def tag(self):
        """The boot's name in logs and its directory: the unit's tag for one unit, boot-<first tag> for several."""
        return self.units[0].tag if len(self.units) == 1 else "boot-" + self.units[0].tag

    def describe(self):
        return "%s: %s" % (self.tag, " ".join(u.tag for u in self.units))


def units_of(scenarios, only_doorbell=()):
    """Every run of these scenarios (--doorbell M: of the runs with a doorbell mode, only mode M's)."""
    return [Unit(sc, r) for sc in scenarios for r in sc.runs()
            if not (only_doorbell and r.doorbell and r.doorbell not in only_doorbell)]


def group(units):
    """The units in boots (see the module's doc string)."""
    boots, open_by_key = [], {}
    for u in units:
        sc = u.scenario
        if sc.alone:
            boots.append(BootPlan([u]))
            continue
        key = sc.boot_key(u.run)
        if key not in open_by_key:
            open_by_key[key] = BootPlan([])
            boots.append(open_by_key[key])
        open_by_key[key].units.append(u)
    out = []
    for b in boots:
        lasts = [u for u in b.units if u.scenario.last]
        rest = [u for u in b.units if not u.scenario.last]
        if rest or lasts[:1]:
            out.append(BootPlan(rest + lasts[:1]))
        out += [BootPlan([u]) for u in lasts[1:]]
    return out


def plan(scenarios, only_doorbell=()):
    return group(units_of(scenarios, only_doorbell))


def self_test(scenarios):
    """The plan's rules on these scenarios (the registry's): every run planned once, a `last` unit ends its boot, an
    `alone` one is by itself, the units of a boot share their boot_key; each reason given."""
    fails = []
    units = units_of(scenarios)
    boots = plan(scenarios)
    planned = [(u.name, u.run) for b in boots for u in b.units]
    if sorted(planned, key=str) != sorted([(u.name, u.run) for u in units], key=str):
        fails.append("the plan does not hold every run exactly once")
    for b in boots:
        if len({u.scenario.boot_key(u.run) for u in b.units}) != 1:
            fails.append("%s: units with different boot keys" % b.tag)
        if any(u.scenario.last for u in b.units[:-1]):
            fails.append("%s: a `last` scenario is not last" % b.tag)
        if len(b.units) > 1 and any(u.scenario.alone for u in b.units):
            fails.append("%s: an `alone` scenario shares the boot" % b.tag)
    for sc in scenarios:
        for what in ("alone", "last"):
            if getattr(sc, what) is True:
                fails.append("%s: %s without a reason" % (sc.name, what))
    return fails
