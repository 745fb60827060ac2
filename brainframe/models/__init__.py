"""The brainframe schema (seed 000 §10): every table the control plane keeps."""

from __future__ import annotations

from brainframe.choices import Boundary, ShareClass

from .access import AclPolicy
from .agents import (
    Agent,
    AgentCredential,
    AgentNote,
    AgentSupervisor,
    AgentToken,
    SupervisorCommand,
)
from .append_only import AppendOnlyError, AppendOnlyModel
from .audit import (
    EMBEDDING_DIMENSIONS,
    AuditCheckpoint,
    OriginRegistry,
    ReasonEdge,
    ReasonLog,
    ToolCall,
)
from .channels import ChannelAdapter, MatrixRoom, OutboundMessage
from .council import (
    CouncilMember,
    CouncilProposal,
    CouncilVote,
    ReviewerPreference,
    StandingApproval,
)
from .events import SYSTEM_STREAM, EventLogEntry, EventSink
from .hooks import Hook, HookCursor, HookMessage
from .ledger import (
    Channel,
    ChannelIdentity,
    Delegation,
    LearningCard,
    LedgerEvent,
    Message,
    Person,
    QueuedMessage,
    QueueMode,
    Session,
    Thread,
    TimerTicks,
    Turn,
)
from .llm import LLMBudget, LLMCacheEntry, LLMKey, LLMRequest, LLMTeam, LLMUpstream
from .memory import ContextBucketEntry, DecayRun
from .proposals import RuleProposal
from .registry import (
    ConstitutionRule,
    ContextBucketDefinition,
    MCPUpstream,
    PrimeDirective,
    Tool,
    UpstreamToolChange,
    ValidationPolicy,
)
from .replica import ReplicaView
from .sharing import MacRule
from .trust import AlignmentSnapshot, MonitoringLevelChange
from .usage import LLMUsage, ModelPrice
from .views import AgentCard, DiscoveryEntry, KanbanCard, PlanRecord
from .webhooks import WebhookDelivery, WebhookSubscription
from .work import (
    AgentTask,
    ApprovalRequest,
    CapabilityGrant,
    Deliverable,
    NotificationDelivery,
)

__all__ = [
    "EMBEDDING_DIMENSIONS",
    "SYSTEM_STREAM",
    "AclPolicy",
    "Agent",
    "AgentCard",
    "AgentCredential",
    "AgentNote",
    "AgentSupervisor",
    "AgentTask",
    "AgentToken",
    "AlignmentSnapshot",
    "AppendOnlyError",
    "AppendOnlyModel",
    "ApprovalRequest",
    "AuditCheckpoint",
    "Boundary",
    "CapabilityGrant",
    "Channel",
    "ChannelAdapter",
    "ChannelIdentity",
    "ConstitutionRule",
    "ContextBucketDefinition",
    "ContextBucketEntry",
    "CouncilMember",
    "CouncilProposal",
    "CouncilVote",
    "DecayRun",
    "Delegation",
    "Deliverable",
    "DiscoveryEntry",
    "EventLogEntry",
    "EventSink",
    "Hook",
    "HookCursor",
    "HookMessage",
    "KanbanCard",
    "LLMBudget",
    "LLMCacheEntry",
    "LLMKey",
    "LLMRequest",
    "LLMTeam",
    "LLMUpstream",
    "LLMUsage",
    "LearningCard",
    "LedgerEvent",
    "MCPUpstream",
    "MacRule",
    "MatrixRoom",
    "Message",
    "ModelPrice",
    "MonitoringLevelChange",
    "NotificationDelivery",
    "OriginRegistry",
    "OutboundMessage",
    "Person",
    "PlanRecord",
    "PrimeDirective",
    "QueueMode",
    "QueuedMessage",
    "ReasonEdge",
    "ReasonLog",
    "ReplicaView",
    "ReviewerPreference",
    "RuleProposal",
    "Session",
    "ShareClass",
    "StandingApproval",
    "SupervisorCommand",
    "Thread",
    "TimerTicks",
    "Tool",
    "ToolCall",
    "Turn",
    "UpstreamToolChange",
    "ValidationPolicy",
    "WebhookDelivery",
    "WebhookSubscription",
]
