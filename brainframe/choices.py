"""Enumerations shared by several brainframe tables (seed 000 §5, §7, §9, §13)."""

from __future__ import annotations

from django.db import models


class ContextBucket(models.TextChoices):
    """The 20 knowledge domains that partition all organisational information (seed 000 §5)."""

    BILLING_FINANCE = "billing_finance", "Billing & finance"
    PROGRAMS_SERVICES = "programs_services", "Programs & services"
    COMMS_STAFF = "comms_staff", "Comms: staff"
    COMMS_PARTICIPANT_CARER = "comms_participant_carer", "Comms: participants & carers"
    COMMS_ADMIN_EXEC = "comms_admin_exec", "Comms: admin & executive"
    COMMS_PUBLIC_OTHER = "comms_public_other", "Comms: public & other"
    TRANSPORTATION = "transportation", "Transportation"
    FACILITIES_ASSETS = "facilities_assets", "Facilities & assets"
    ROSTERING_SCHEDULING = "rostering_scheduling", "Rostering & scheduling"
    PAYROLL_ALLIANCE = "payroll_alliance", "Payroll (Alliance)"
    STAFF_PERFORMANCE = "staff_performance", "Staff performance"
    HEALTH_MEDICAL_WELLBEING = "health_medical_wellbeing", "Health, medical & wellbeing"
    COMPLIANCE_REGULATORY = "compliance_regulatory", "Compliance & regulatory"
    FEEDBACK_AUDITS = "feedback_audits", "Feedback & audits"
    DATA_REPORTING = "data_reporting", "Data & reporting"
    PR_SOCIALS = "pr_socials", "PR & socials"
    INCIDENTS_SAFETY = "incidents_safety", "Incidents & safety"
    TRAINING_DEVELOPMENT = "training_development", "Training & development"
    PARTICIPANT_GOALS = "participant_goals", "Participant goals"
    VENDOR_SUPPLIERS = "vendor_suppliers", "Vendors & suppliers"


#: The scope of each bucket, verbatim from seed 000 §5, in the seed's order (1–20).
BUCKET_SCOPES: dict[str, str] = {
    ContextBucket.BILLING_FINANCE: (
        "Invoicing, payments, NDIS claims, Xero sync, financial reporting"
    ),
    ContextBucket.PROGRAMS_SERVICES: "Program definitions, service types, capacity, enrolments",
    ContextBucket.COMMS_STAFF: "Internal staff communications, announcements, memos",
    ContextBucket.COMMS_PARTICIPANT_CARER: "Participant and carer messaging, check-ins, updates",
    ContextBucket.COMMS_ADMIN_EXEC: "Executive and admin communications, board updates",
    ContextBucket.COMMS_PUBLIC_OTHER: "Public-facing comms, external enquiries, general inbound",
    ContextBucket.TRANSPORTATION: "Vehicle bookings, driver schedules, route planning",
    ContextBucket.FACILITIES_ASSETS: "Building maintenance, equipment, asset registers",
    ContextBucket.ROSTERING_SCHEDULING: "Shift creation, roster publication, availability, swaps",
    ContextBucket.PAYROLL_ALLIANCE: "Pay runs, Alliance Payroll integration, leave, allowances",
    ContextBucket.STAFF_PERFORMANCE: "KPIs, reviews, coaching notes, performance journals",
    ContextBucket.HEALTH_MEDICAL_WELLBEING: "Medical records, wellbeing checks, allied health",
    ContextBucket.COMPLIANCE_REGULATORY: "NDIS audits, quality indicators, policy compliance",
    ContextBucket.FEEDBACK_AUDITS: "Internal audits, feedback forms, improvement actions",
    ContextBucket.DATA_REPORTING: "Dashboards, analytics, scheduled reports, exports",
    ContextBucket.PR_SOCIALS: "Social media, public relations, marketing content",
    ContextBucket.INCIDENTS_SAFETY: "Incident reports, WHS, hazard registers, investigations",
    ContextBucket.TRAINING_DEVELOPMENT: "Staff training records, certifications, CPD, onboarding",
    ContextBucket.PARTICIPANT_GOALS: "NDIS goals, progress notes, outcome tracking",
    ContextBucket.VENDOR_SUPPLIERS: "Supplier contracts, procurement, vendor management",
}


class RiskLevel(models.TextChoices):
    READ = "read", "Read"
    WRITE = "write", "Write"
    CRITICAL = "critical", "Critical"


class ExecutionMode(models.TextChoices):
    AUTO = "auto", "Auto (immediate)"
    REVIEW = "review", "Review (approval queue)"
    DISABLED = "disabled", "Disabled"


class ValidationMode(models.TextChoices):
    MONITOR = "monitor", "Monitor (log only)"
    INTERCEPT = "intercept", "Intercept (block + review)"
    STRICT = "strict", "Strict (block + require senior approval)"


class DataClass(models.TextChoices):
    LOGISTICS = "logistics", "Logistics"
    CLINICAL = "clinical", "Clinical"
    FINANCE = "finance", "Finance"
    PII = "pii", "PII"


class MonitoringLevel(models.IntegerChoices):
    """Trust tiers (seed 000 §9); the threshold to hold each is in ``LEVEL_THRESHOLDS``."""

    REVIEW_ALL = 0, "0 · Review-All"
    PRE_EXEC_SAMPLING = 1, "1 · Pre-Exec Sampling"
    POST_EXEC_REVIEW = 2, "2 · Post-Exec Review"
    SPOT_CHECK = 3, "3 · Spot-Check"
    AUTONOMOUS = 4, "4 · Autonomous"


#: Alignment score needed to hold each monitoring level (seed 000 §9).
LEVEL_THRESHOLDS: dict[int, float] = {0: 0.0, 1: 0.70, 2: 0.80, 3: 0.90, 4: 0.95}


def default_execution_mode(risk_level: str) -> str:
    """Seed 000 §7: ``read`` tools run automatically, ``write`` and ``critical`` go to review."""
    return ExecutionMode.AUTO if risk_level == RiskLevel.READ else ExecutionMode.REVIEW


def default_monitoring_ceiling(risk_level: str) -> int:
    """ARCHITECTURE.md "The gate": critical tools stay under post-execution review at most."""
    return MonitoringLevel.POST_EXEC_REVIEW if risk_level == RiskLevel.CRITICAL else 4


class TrustLevel(models.TextChoices):
    """How far an agent (and the content it passes on) is trusted (seed 001 Guardian/Executor)."""

    UNTRUSTED = "untrusted", "Untrusted"
    STANDARD = "standard", "Standard"
    OPERATOR = "operator", "Operator"
    SYSTEM = "system", "System"


TRUST_RANK = {"untrusted": 0, "standard": 1, "operator": 2, "system": 3}


class PermissionTier(models.TextChoices):
    """Executor permission tiers (seed 001) and the trust each requires."""

    READ_ONLY = "READ_ONLY", "Read only (any trust)"
    WRITE_SAFE = "WRITE_SAFE", "Write, safe (standard+)"
    WRITE_DESTRUCTIVE = "WRITE_DESTRUCTIVE", "Write, destructive (operator+)"
    ADMIN = "ADMIN", "Admin (system only)"


TIER_REQUIRES = {
    PermissionTier.READ_ONLY: TrustLevel.UNTRUSTED,
    PermissionTier.WRITE_SAFE: TrustLevel.STANDARD,
    PermissionTier.WRITE_DESTRUCTIVE: TrustLevel.OPERATOR,
    PermissionTier.ADMIN: TrustLevel.SYSTEM,
}


def default_permission_tier(risk_level: str) -> str:
    return {
        RiskLevel.READ: PermissionTier.READ_ONLY,
        RiskLevel.WRITE: PermissionTier.WRITE_SAFE,
        RiskLevel.CRITICAL: PermissionTier.WRITE_DESTRUCTIVE,
    }[RiskLevel(risk_level)]


class MemorySource(models.TextChoices):
    """Where a memory item came from (seed 001 provenance)."""

    SESSION = "session", "An agent's session"
    API = "api", "The API"
    SCHEDULED = "scheduled", "A scheduled job"
    PERSON = "person", "A person (a message)"
    STAFF = "staff", "Staff (admin or board)"


class Boundary(models.TextChoices):
    """Who else may read something an agent owns (seed 002 DAC)."""

    ALL = "all", "Anyone (MAC rules still apply)"
    NONE = "none", "Nobody but the owner"
    ASK = "ask", "Decided by its sharing policy (ABAC)"


class ShareClass(models.TextChoices):
    """What kind of data it is, for the MAC rules."""

    GENERAL = "general", "General"
    HEALTH = "health", "Health record"
    CREDENTIALS = "credentials", "Credentials"
