"""The council from the command line: seat its first members, list seats and open proposals."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from brainframe.models import CouncilMember, CouncilProposal
from brainframe.services.council.votes import CouncilError, council_seat_first, tally


class Command(BaseCommand):
    help = (
        "council seat USER …: seat the first members of an empty council (afterwards seats "
        "change only by a passed proposal). council list: the seats and the open proposals."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        seat = sub.add_parser("seat", help="seat the first members (the council must be empty)")
        seat.add_argument("usernames", nargs="+")
        sub.add_parser("list", help="seats and open proposals")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "seat":
            users = []
            for name in options["usernames"]:
                user = get_user_model().objects.filter(username=name).first()
                if user is None:
                    raise CommandError(f"no user {name!r}")
                users.append(user)
            try:
                council_seat_first(users=users)
            except CouncilError as exc:
                raise CommandError(f"{exc.code}: {exc.detail}") from None
        seats = CouncilMember.objects.select_related("user").order_by("seated_at")
        self.stdout.write(f"council: {seats.count()} member(s)")
        for seat_ in seats:
            self.stdout.write(f"  {seat_.user.get_username()} (seated {seat_.seated_at:%Y-%m-%d})")
        for proposal in CouncilProposal.objects.filter(status=CouncilProposal.Status.OPEN):
            t = tally(proposal)
            left = proposal.deadline - timezone.now()
            self.stdout.write(
                f"open: {proposal.title} — yes {t.yes}/{t.yes_needed} needed, no {t.no}, "
                f"abstain {t.abstain}; {max(0, int(left.total_seconds() // 3600))} h left"
            )
