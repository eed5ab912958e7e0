"""The use cases, one layer shared by every door: MCP tools, the CLI (through the
owner's admin API or in-process), the memory browser and the benches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where the services are made (``over``), not with the package:
    # a module of it that needs none of them (``import_check``, which ``kioku import``
    # runs before it opens anything) would otherwise load the stores, numpy and the
    # engines (~0.3 s of CPU a command)
    from mcp_gateway.services.app import AppContext
    from mcp_gateway.services.context import ContextService
    from mcp_gateway.services.maintenance import MaintenanceService
    from mcp_gateway.services.notes import NoteService
    from mcp_gateway.services.records import RecordService
    from mcp_gateway.services.reindex import Rebuilder
    from mcp_gateway.services.transfer import TransferService


@dataclass(slots=True)
class Services:
    app: AppContext
    notes: NoteService
    records: RecordService
    maintenance: MaintenanceService
    context: ContextService
    rebuild: Rebuilder
    transfer: TransferService

    @classmethod
    def unopened(cls) -> Services:
        """Services whose fields ``fill`` sets once the app is open: for a door that
        answers before that (the owner's session socket answers ``initialize`` while
        the model loads) and lets no use case through until then."""
        return cls.__new__(cls)

    def fill(self, app: AppContext) -> None:
        opened = Services.over(app)
        for name in self.__slots__:
            setattr(self, name, getattr(opened, name))

    @classmethod
    def over(cls, app: AppContext) -> Services:
        from mcp_gateway.services.context import ContextService
        from mcp_gateway.services.maintenance import MaintenanceService
        from mcp_gateway.services.notes import NoteService
        from mcp_gateway.services.records import RecordService
        from mcp_gateway.services.reindex import Rebuilder
        from mcp_gateway.services.transfer import TransferService

        return cls(
            app=app,
            notes=NoteService(app),
            records=RecordService(app),
            maintenance=MaintenanceService(app),
            context=ContextService(app),
            rebuild=Rebuilder(app),
            transfer=TransferService(app),
        )


__all__ = ["Services"]
