"""The telecom data model, field-compatible with τ²-bench telecom's db.json and user_db.json.

Two sides. The carrier's tables (plans, customers, lines, bills, devices) are what the agent's tools read and
write; the customer's phone (`device`) and their situation (`surroundings`) are the customer-side state their own
tools act on. Field names and values are τ²-bench's, every field written out (nulls too), so a replayed end state
compares with theirs record for record. Dates are 'YYYY-MM-DD', datetimes 'YYYY-MM-DDTHH:MM:SS'.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from pipeline.world import Record

LineStatus = Literal["Active", "Suspended", "Pending Activation", "Closed"]
BillStatus = Literal["Draft", "Issued", "Awaiting Payment", "Paid", "Overdue", "Disputed"]
AccountStatus = Literal["Active", "Suspended", "Pending Verification", "Closed"]
SimStatus = Literal["active", "missing", "locked_pin", "locked_puk"]
Technology = Literal["none", "2G", "3G", "4G", "5G"]
NetworkMode = Literal["4g_5g_preferred", "4g_only", "3g_only", "2g_only"]
NETWORK_MODES: tuple[str, ...] = NetworkMode.__args__  # type: ignore[attr-defined]
Signal = Literal["none", "poor", "fair", "good", "excellent"]
Performance = Literal["unknown", "poor", "fair", "good", "excellent"]
NetworkStatus = Literal["connected", "searching", "no_service", "emergency_only"]
PERMISSIONS = ("sms", "storage", "phone", "network")


class TelecomRecord(Record):
    keep_none: ClassVar[bool] = True  # db.json and user_db.json write every field, nulls included


# ---- the carrier (agent side) ------------------------------------------------------------------------------------
class Plan(TelecomRecord):
    plan_id: str
    name: str
    data_limit_gb: float = Field(description="Monthly data allowance (GB).")
    price_per_month: float
    data_refueling_price_per_gb: float


class Address(TelecomRecord):
    street: str
    city: str
    state: str
    zip_code: str


class PaymentMethod(TelecomRecord):
    method_type: Literal["Credit Card", "Debit Card", "PayPal"]
    account_number_last_4: str
    expiration_date: str = Field(description="'MM/YYYY'.")


class Customer(TelecomRecord):
    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    phone_number: str = Field(description="Primary contact number.")
    address: Address
    account_status: AccountStatus
    payment_methods: list[PaymentMethod]
    line_ids: list[str]
    bill_ids: list[str]
    created_at: str
    last_extension_date: str | None
    goodwill_credit_used_this_year: float


class Line(TelecomRecord):
    line_id: str
    phone_number: str
    status: LineStatus
    plan_id: str
    device_id: str | None
    data_used_gb: float
    data_refueling_gb: float
    roaming_enabled: bool
    contract_end_date: str | None
    last_plan_change_date: str | None
    last_sim_replacement_date: str | None
    suspension_start_date: str | None


class LineItem(TelecomRecord):
    description: str
    amount: float
    date: str
    item_type: str = Field(description="Plan Charge, Overage, Fee, Charge, Credit, Payment, ...")


class Bill(TelecomRecord):
    bill_id: str
    customer_id: str
    period_start: str
    period_end: str
    issue_date: str
    total_due: float
    due_date: str
    line_items: list[LineItem]
    status: BillStatus


class Device(TelecomRecord):
    device_id: str
    device_type: Literal["phone", "router", "tablet", "watch", "other"]
    model: str
    imei: str | None
    is_esim_capable: bool
    activated: bool
    activation_date: str | None
    last_esim_transfer_date: str | None


class TelecomDB(TelecomRecord):
    plans: list[Plan]
    customers: list[Customer]
    lines: list[Line]
    bills: list[Bill]
    devices: list[Device]


TABLES: dict[str, tuple[type[Record], str]] = {
    "plans": (Plan, "plan_id"),
    "customers": (Customer, "customer_id"),
    "lines": (Line, "line_id"),
    "bills": (Bill, "bill_id"),
    "devices": (Device, "device_id"),
}
"""Table → (record type, key field), in db.json's order."""


# ---- the phone (customer side) -----------------------------------------------------------------------------------
class APNSettings(TelecomRecord):
    apn_name: Literal["internet", "broken"] = "internet"
    reset_at_reboot: bool = Field(default=False, description="Back to defaults at the next reboot.")
    mms_apn: str | None = "mms"
    mmsc_url: str | None = Field(default="http://mms.carrier.com/mms/wapenc", description="Needed for MMS.")
    mms_proxy: str | None = None
    mms_port: int | None = None


class VpnDetails(TelecomRecord):
    server_address: str | None = None
    protocol: str | None = None
    server_performance: Performance = "unknown"


class AppPermissions(TelecomRecord):
    sms: bool = False
    storage: bool = False
    phone: bool = False
    network: bool = False


class AppStatus(TelecomRecord):
    app_name: str
    permissions: AppPermissions


class PhoneDevice(TelecomRecord):
    """The customer's phone (user_db.json `device`)."""

    sim_card_status: SimStatus
    sim_card_missing: bool
    airplane_mode: bool
    network_signal_strength: Signal
    network_technology_connected: Technology
    network_connection_status: NetworkStatus
    battery_level: int
    data_enabled: bool
    roaming_enabled: bool = Field(description="The phone's data-roaming switch.")
    network_mode_preference: NetworkMode
    active_apn_settings: APNSettings
    wifi_enabled: bool
    wifi_connected: bool
    wifi_ssid: str | None
    wifi_signal_strength: Signal
    wifi_calling_enabled: bool
    wifi_calling_mms_over_wifi: bool
    data_saver_mode: bool
    vpn_enabled_setting: bool
    vpn_connected: bool
    vpn_details: VpnDetails | None
    app_statuses: dict[str, AppStatus]


class PaymentRequest(TelecomRecord):
    bill_id: str
    amount_due: float
    paid: bool = False


class Surroundings(TelecomRecord):
    """Where the customer is and what the carrier's side says of their line (user_db.json `surroundings`)."""

    name: str | None
    phone_number: str | None
    is_abroad: bool
    roaming_allowed: bool = Field(description="The line's roaming permission, copied from the carrier.")
    signal_strength: dict[Literal["2G", "3G", "4G", "5G"], Signal]
    mobile_data_usage_exceeded: bool
    line_active: bool
    payment_request: PaymentRequest | None


class TelecomUserDB(TelecomRecord):
    device: PhoneDevice
    surroundings: Surroundings


USER_TABLES: dict[str, type[Record]] = {"device": PhoneDevice, "surroundings": Surroundings}
PHONE = "customer"
"""The key of the single record in each customer-side table."""
