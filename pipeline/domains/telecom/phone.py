"""The customer's phone (the customer's side of telecom): its 30 tools, the set-up functions that break it, the
network search, and the phone-side env assertions. Each tool docstring is what the customer is shown.

The phone reconnects only when something makes it search (toggling airplane mode, data or roaming, a network
mode, reseating the SIM, the APN, a reboot): it then takes the technology its preference names (4G/5G preferred:
5G, or 4G without 5G signal) at the signal the surroundings give it, unless the SIM is missing or locked, airplane
mode is on, the APN is broken or the line is not active (no service). A change on the carrier's side reaches the
connection only at the next search.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from pipeline.domains.telecom.schema import (
    PERMISSIONS,
    PHONE,
    APNSettings,
    NetworkMode,
    PhoneDevice,
    Surroundings,
    VpnDetails,
)
from pipeline.world import Session, ToolError, ToolRegistry

Generation = Literal["2G", "3G", "4G", "5G"]

PHONE_TOOLS = ToolRegistry()
PHONE_SETUP = ToolRegistry()
TECH_SPEED = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0), "none": (0.0, 0.0)}
SIGNAL_FACTOR = {"none": 0.0, "poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}
SIGNAL_BAR = {
    "none": "No Signal",
    "poor": "1 bar (Poor)",
    "fair": "2 bars (Fair)",
    "good": "3 bars (Good)",
    "excellent": "4 bars (Excellent)",
}
SPEED_ADVICE = {
    "Very Poor": "Very slow: even basic browsing may be hard.",
    "Poor": "Slow: browsing is sluggish, streaming difficult.",
    "Fair": "Fine for browsing and standard-definition video.",
    "Good": "Good for most uses, HD video included.",
    "Excellent": "Very fast.",
}


class ApnArg(BaseModel):
    """APN settings as the customer enters them."""

    model_config = ConfigDict(extra="forbid")

    apn_name: Literal["internet", "broken"] = "internet"
    reset_at_reboot: bool = False
    mms_apn: str | None = "mms"
    mmsc_url: str | None = "http://mms.carrier.com/mms/wapenc"
    mms_proxy: str | None = None
    mms_port: int | None = None


# ---- state and derived facts ------------------------------------------------------------------------------------
def device(s: Session) -> PhoneDevice:
    return s.get("device", PHONE)


def surroundings(s: Session) -> Surroundings:
    return s.get("surroundings", PHONE)


def _no_service(d: PhoneDevice) -> None:
    d.network_connection_status, d.network_technology_connected, d.network_signal_strength = (
        "no_service",
        "none",
        "none",
    )


def sim_status(d: PhoneDevice) -> str:
    return "missing" if d.sim_card_missing else d.sim_card_status


def network_search(s: Session) -> None:
    """Re-evaluate the cellular connection from the SIM, the preference, the switches and the surroundings."""
    d, where = s.edit("device", PHONE), surroundings(s)
    if sim_status(d) == "active":
        signal = where.signal_strength
        only: dict[str, Generation] = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}
        tech = only.get(d.network_mode_preference)
        if tech is None:  # 4g_5g_preferred
            tech = "4G" if signal.get("5G", "none") == "none" else "5G"
        d.network_connection_status = "connected"
        d.network_technology_connected, d.network_signal_strength = tech, signal.get(tech, "none")
    else:
        _no_service(d)
    if d.airplane_mode or d.active_apn_settings.apn_name == "broken" or not where.line_active:
        _no_service(d)


def mobile_data_working(s: Session) -> bool:
    d, where = device(s), surroundings(s)
    if d.airplane_mode or d.network_signal_strength == "none" or d.network_connection_status == "no_service":
        return False
    if where.is_abroad and not (d.roaming_enabled and where.roaming_allowed):
        return False
    return d.data_enabled and not where.mobile_data_usage_exceeded


def speed(s: Session) -> tuple[float | None, str]:
    """(Mbps, label) of a speed test; (None, 'No Connection') when mobile data does not work."""
    if not mobile_data_working(s):
        return None, "No Connection"
    d = device(s)
    factor = 0.1 if d.vpn_connected and d.vpn_details and d.vpn_details.server_performance == "poor" else 1.0
    if d.data_saver_mode:
        factor *= 0.2
    low, high = TECH_SPEED[d.network_technology_connected]
    mbps = round((low + high) / 2.0 * SIGNAL_FACTOR[d.network_signal_strength] * factor, 2)
    label = next(
        (name for limit, name in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")) if mbps < limit),
        "Excellent",
    )
    return mbps, label


def can_send_mms_now(s: Session) -> bool:
    d = device(s)
    if not mobile_data_working(s) or d.network_technology_connected == "2G":
        return False
    if d.wifi_calling_enabled and d.wifi_calling_mms_over_wifi:
        return False
    if d.active_apn_settings.mmsc_url is None:
        return False
    app = d.app_statuses.get("messaging")
    return app is not None and app.permissions.sms and app.permissions.storage


def status_bar(s: Session) -> str:
    d = device(s)
    parts = []
    if d.airplane_mode:
        parts.append("Airplane Mode")
    else:
        parts.append(f"Signal: {SIGNAL_BAR[d.network_signal_strength]}")
        if d.network_technology_connected != "none":
            parts.append(d.network_technology_connected)
        if d.data_enabled and d.network_technology_connected != "none":
            parts.append("Mobile Data" + (" (Data Saver)" if d.data_saver_mode else ""))
        else:
            parts.append("Mobile Data Off")
    if d.wifi_enabled and d.wifi_connected:
        parts.append(f"Wi-Fi: {d.wifi_ssid}" if d.wifi_ssid else "Wi-Fi")
    if d.vpn_connected:
        parts.append("VPN")
    parts.append(f"Battery {d.battery_level}%")
    return "Status Bar: " + " | ".join(parts)


def _with_bar(s: Session, text: str) -> str:
    return f"{text}\n{status_bar(s)}"


def _drop_wifi(d: PhoneDevice) -> None:
    d.wifi_connected, d.wifi_ssid, d.wifi_signal_strength = False, None, "none"


def _airplane(s: Session) -> bool:
    d = s.edit("device", PHONE)
    turning_off = d.airplane_mode
    d.airplane_mode = not turning_off
    if turning_off:
        d.network_connection_status = "searching"
        if d.wifi_enabled:
            _drop_wifi(d)
    else:
        _drop_wifi(d)
        d.vpn_connected, d.vpn_details = False, None
    network_search(s)
    return device(s).airplane_mode


def _flip(s: Session, field: str, search: bool = True) -> bool:
    d = s.edit("device", PHONE)
    setattr(d, field, not getattr(d, field))
    if search:
        network_search(s)
    return getattr(device(s), field)


def _connect_vpn(s: Session) -> bool:
    d = s.edit("device", PHONE)
    if d.vpn_connected:
        return False
    d.vpn_connected = True
    d.vpn_details = VpnDetails(server_address="192.168.1.1", protocol="OpenVPN", server_performance="excellent")
    return True


def _on_off(value: bool) -> str:
    return "ON" if value else "OFF"


# ---- reads -------------------------------------------------------------------------------------------------------
@PHONE_TOOLS.register("read")
def check_status_bar(s: Session) -> str:
    """Show the icons in your phone's status bar: signal, network type, mobile data, Wi-Fi, VPN and battery."""
    return status_bar(s)


@PHONE_TOOLS.register("read")
def check_network_status(s: Session) -> str:
    """Show your phone's connection: airplane mode, SIM, cellular status, signal, network type, mobile data, data
    roaming and Wi-Fi."""
    d = device(s)
    lines = [
        f"Airplane Mode: {_on_off(d.airplane_mode)}",
        f"SIM Card Status: {sim_status(d)}",
        f"Cellular Connection: {d.network_connection_status}",
        f"Cellular Signal: {d.network_signal_strength}",
        f"Cellular Network Type: {d.network_technology_connected}",
        f"Mobile Data Enabled: {'Yes' if d.data_enabled else 'No'}",
        f"Data Roaming Enabled: {'Yes' if d.roaming_enabled else 'No'}",
        f"Wi-Fi Radio: {_on_off(d.wifi_enabled)}",
        f"Wi-Fi Connected: {'Yes' if d.wifi_connected else 'No'}",
    ]
    if d.wifi_connected:
        lines.append(f"Connected Wi-Fi Network: {d.wifi_ssid}")
    return "\n".join(lines)


@PHONE_TOOLS.register("read")
def check_network_mode_preference(s: Session) -> str:
    """Show which type of cellular network your phone prefers."""
    return f"Network Mode Preference: {device(s).network_mode_preference}"


@PHONE_TOOLS.register("read")
def check_sim_status(s: Session) -> str:
    """Show whether your SIM card is active, missing, or locked with a PIN or PUK code."""
    return {
        "active": "Your SIM card is active and working.",
        "missing": "No SIM card detected in the phone.",
        "locked_pin": "The SIM card is locked with a PIN code.",
        "locked_puk": "The SIM card is locked with a PUK code.",
    }[sim_status(device(s))]


@PHONE_TOOLS.register("read")
def check_data_restriction_status(s: Session) -> str:
    """Show whether Data Saver mode (which limits data use) is on."""
    return "Data Saver mode is ON (limits data usage)." if device(s).data_saver_mode else "Data Saver mode is OFF."


@PHONE_TOOLS.register("read")
def check_apn_settings(s: Session) -> str:
    """Show the APN settings your phone uses for mobile data: the APN name and the MMSC URL used for picture
    messages."""
    apn = device(s).active_apn_settings
    return (
        f"Current APN Name: {apn.apn_name}\nMMSC URL (for picture messages): {apn.mmsc_url or 'Not Set'}\n"
        "(These are technical settings, usually best left unchanged.)"
    )


@PHONE_TOOLS.register("read")
def check_wifi_status(s: Session) -> str:
    """Show whether Wi-Fi is on, which network it is connected to, and its signal."""
    d = device(s)
    if not d.wifi_enabled:
        return "Wi-Fi is turned OFF."
    if d.wifi_connected:
        return f"Wi-Fi is ON and connected to '{d.wifi_ssid}'. Signal strength: {d.wifi_signal_strength}."
    return "Wi-Fi is ON but not connected to any network."


@PHONE_TOOLS.register("read")
def check_wifi_calling_status(s: Session) -> str:
    """Show whether Wi-Fi Calling (calls over Wi-Fi instead of the cellular network) is on."""
    return f"Wi-Fi Calling is currently turned {_on_off(device(s).wifi_calling_enabled)}."


@PHONE_TOOLS.register("read")
def check_vpn_status(s: Session) -> str:
    """Show whether a VPN is connected, with its details."""
    d = device(s)
    if d.vpn_connected:
        return f"VPN is ON and connected. Details: {d.vpn_details.model_dump() if d.vpn_details else 'none'}"
    if d.vpn_enabled_setting:
        return "VPN is turned ON in settings, but currently not connected."
    return "VPN is turned OFF."


@PHONE_TOOLS.register("read")
def check_installed_apps(s: Session) -> str:
    """List the apps installed on your phone."""
    return f"The following apps are installed on the phone: {', '.join(device(s).app_statuses)}"


def _granted(s: Session, app_name: str) -> list[str]:
    app = device(s).app_statuses.get(app_name)
    if app is None:
        raise ToolError(f"app '{app_name}' not found on this phone", "not_found")
    return [p for p in PERMISSIONS if getattr(app.permissions, p)]


@PHONE_TOOLS.register("read")
def check_app_status(s: Session, app_name: str) -> str:
    """Show an app's details, with the permissions it has.

    Args:
        app_name: The app, such as 'messaging'.
    """
    granted = _granted(s, app_name)
    body = "\n".join(f"   - {p}" for p in granted)
    return f"Status for App: {app_name}\n" + (
        f" - Permissions Granted:\n{body}" if granted else " - Permissions: None granted."
    )


@PHONE_TOOLS.register("read")
def check_app_permissions(s: Session, app_name: str) -> str:
    """Show which permissions an app has (sms, storage, phone, network).

    Args:
        app_name: The app, such as 'messaging'.
    """
    granted = _granted(s, app_name)
    if not granted:
        return f"App '{app_name}' currently has no permissions granted."
    return f"App '{app_name}' has permission for: {', '.join(granted)}."


@PHONE_TOOLS.register("read")
def run_speed_test(s: Session) -> str:
    """Measure your mobile internet download speed and say what it is good for."""
    mbps, label = speed(s)
    if mbps is None:
        return f"Speed test failed: {label}."
    return f"Speed Test Result: {mbps:.2f} Mbps ({label}). {SPEED_ADVICE[label]}"


@PHONE_TOOLS.register("read")
def can_send_mms(s: Session) -> str:
    """Check whether your messaging app can send MMS (picture) messages."""
    ok = can_send_mms_now(s)
    return f"Your messaging app {'can' if ok else 'cannot'} send MMS messages."


@PHONE_TOOLS.register("read")
def check_payment_request(s: Session) -> str:
    """Check whether the carrier has sent you a payment request."""
    req = surroundings(s).payment_request
    if req is None:
        return "No payment request has been made."
    return f"You have a payment request for bill {req.bill_id} of {req.amount_due} USD."


# ---- writes ------------------------------------------------------------------------------------------------------
@PHONE_TOOLS.register("write")
def toggle_airplane_mode(s: Session) -> str:
    """Turn Airplane Mode on or off. On, it cuts every radio: cellular, Wi-Fi and Bluetooth."""
    return _with_bar(s, f"Airplane Mode is now {_on_off(_airplane(s))}.")


@PHONE_TOOLS.register("write")
def toggle_data(s: Session) -> str:
    """Turn mobile data on or off (internet over the cellular network when there is no Wi-Fi)."""
    return _with_bar(s, f"Mobile Data is now {_on_off(_flip(s, 'data_enabled'))}.")


@PHONE_TOOLS.register("write")
def toggle_roaming(s: Session) -> str:
    """Turn Data Roaming on or off. On, your phone may use data networks outside your carrier's coverage (abroad)."""
    return _with_bar(s, f"Data Roaming is now {_on_off(_flip(s, 'roaming_enabled'))}.")


@PHONE_TOOLS.register("write")
def toggle_data_saver_mode(s: Session) -> str:
    """Turn Data Saver mode on or off. On, it reduces data use, which can slow your connection."""
    return _with_bar(s, f"Data Saver Mode is now {_on_off(_flip(s, 'data_saver_mode', search=False))}.")


@PHONE_TOOLS.register("write")
def toggle_wifi(s: Session) -> str:
    """Turn the Wi-Fi radio on or off."""
    if device(s).airplane_mode:
        raise ToolError("cannot change Wi-Fi settings while Airplane Mode is ON")
    d = s.edit("device", PHONE)
    d.wifi_enabled = not d.wifi_enabled
    if not d.wifi_enabled:
        _drop_wifi(d)
    return _with_bar(s, f"Wi-Fi is now {_on_off(d.wifi_enabled)}.")


@PHONE_TOOLS.register("write")
def toggle_wifi_calling(s: Session) -> str:
    """Turn Wi-Fi Calling on or off (calls over Wi-Fi instead of the cellular network)."""
    return _with_bar(s, f"Wi-Fi Calling is now {_on_off(_flip(s, 'wifi_calling_enabled', search=False))}.")


@PHONE_TOOLS.register("write")
def set_network_mode_preference(s: Session, mode: NetworkMode) -> str:
    """Choose the type of cellular network your phone prefers. Faster networks (4G/5G) may use more battery.

    Args:
        mode: One of '4g_5g_preferred', '4g_only', '3g_only', '2g_only'.
    """
    s.edit("device", PHONE).network_mode_preference = mode
    network_search(s)
    return _with_bar(s, f"Preferred Network Mode set to: {mode}")


@PHONE_TOOLS.register("write")
def reseat_sim_card(s: Session) -> str:
    """Take the SIM card out and put it back in; this can fix a SIM the phone does not recognise."""
    s.edit("device", PHONE).sim_card_missing = False
    network_search(s)
    return _with_bar(s, "SIM card re-seated successfully.")


@PHONE_TOOLS.register("write")
def set_apn_settings(s: Session, apn_settings: ApnArg) -> str:
    """Replace your phone's APN settings.

    Args:
        apn_settings: The new settings: apn_name, reset_at_reboot, mms_apn, mmsc_url, mms_proxy, mms_port.
    """
    s.edit("device", PHONE).active_apn_settings = APNSettings(**apn_settings.model_dump())
    network_search(s)
    return _with_bar(s, f"APN settings set to: {apn_settings.apn_name}")


@PHONE_TOOLS.register("write")
def reset_apn_settings(s: Session) -> str:
    """Reset your APN settings to the defaults; the reset takes effect at the next reboot."""
    d = s.edit("device", PHONE)
    d.active_apn_settings = d.active_apn_settings.model_copy(update={"reset_at_reboot": True})
    network_search(s)
    return _with_bar(s, "APN settings will reset at reboot.")


@PHONE_TOOLS.register("write")
def reboot_device(s: Session) -> str:
    """Restart your phone; this clears many temporary glitches and restarts its network services."""
    d = s.edit("device", PHONE)
    lines = []
    if d.active_apn_settings.reset_at_reboot:
        lines.append("Resetting APN settings...")
        d.active_apn_settings = APNSettings()
    lines.append("Restarting network services...")
    d.network_connection_status = "searching"
    network_search(s)
    return _with_bar(s, "\n".join(lines))


@PHONE_TOOLS.register("write")
def connect_vpn(s: Session) -> str:
    """Connect to your VPN."""
    if not _connect_vpn(s):
        return "VPN already connected."
    return _with_bar(s, "VPN connected successfully.")


@PHONE_TOOLS.register("write")
def disconnect_vpn(s: Session) -> str:
    """Disconnect the active VPN connection (it may be slowing your connection)."""
    if not device(s).vpn_connected:
        return _with_bar(s, "No active VPN connection to disconnect.")
    d = s.edit("device", PHONE)
    d.vpn_connected, d.vpn_details = False, None
    return _with_bar(s, "VPN disconnected successfully.")


@PHONE_TOOLS.register("write")
def grant_app_permission(s: Session, app_name: str, permission: str) -> str:
    """Give an app a permission it needs (sms, storage, phone or network).

    Args:
        app_name: The app, such as 'messaging'.
        permission: The permission, in lower case.
    """
    permission = permission.lower()
    if app_name not in device(s).app_statuses:
        raise ToolError(f"app '{app_name}' not found on this phone", "not_found")
    if permission not in PERMISSIONS:
        raise ToolError(f"permission '{permission}' is not one of {', '.join(PERMISSIONS)}", "invalid_arguments")
    setattr(s.edit("device", PHONE).app_statuses[app_name].permissions, permission, True)
    return _with_bar(s, f"Permission '{permission}' granted to app '{app_name}'.")


@PHONE_TOOLS.register("write")
def make_payment(s: Session) -> str:
    """Pay the bill the carrier sent you a payment request for."""
    req = surroundings(s).payment_request
    if req is None:
        raise ToolError("you do not have a payment request", "not_found")
    if req.paid:
        raise ToolError(f"bill {req.bill_id} is already paid")
    edited = s.edit("surroundings", PHONE)
    edited.payment_request = req.model_copy(update={"paid": True})
    return f"Payment of {req.amount_due} USD has been made for bill {req.bill_id}."


# ---- set-up functions (task initialisation; not tools) --------------------------------------------------------
@PHONE_SETUP.register("write")
def set_user_info(s: Session, name: str, phone_number: str) -> str:
    """The customer's name and phone number.

    Args:
        name: Full name.
        phone_number: Their line's number.
    """
    where = s.edit("surroundings", PHONE)
    where.name, where.phone_number = name, phone_number
    return "ok"


@PHONE_SETUP.register("write")
def set_user_location(s: Session, abroad: bool) -> str:
    """Whether the customer is abroad.

    Args:
        abroad: True when abroad.
    """
    s.edit("surroundings", PHONE).is_abroad = abroad
    return "ok"


def _turn(field: str, on: bool, search: bool = True):
    """Set a switch by toggling it, and toggling again when the first toggle went the wrong way (as τ²-bench's
    set-up does: a switch already in place is toggled twice, each toggle with its network search)."""

    def setup(s: Session) -> str:
        if _flip(s, field, search) != on:
            _flip(s, field, search)
        return "ok"

    return setup


def _register_turns() -> None:
    for name, field, on, search in (
        ("turn_data_off", "data_enabled", False, True),
        ("turn_roaming_on", "roaming_enabled", True, True),
        ("turn_roaming_off", "roaming_enabled", False, True),
        ("turn_data_saver_mode_on", "data_saver_mode", True, False),
        ("turn_data_saver_mode_off", "data_saver_mode", False, False),
    ):
        func = _turn(field, on, search)
        func.__name__, func.__doc__ = name, f"Set the phone's {field} to {on}."
        PHONE_SETUP.register("write")(func)


_register_turns()


@PHONE_SETUP.register("write")
def turn_data_on(s: Session) -> str:
    """Mobile data on (no network search)."""
    s.edit("device", PHONE).data_enabled = True
    return "ok"


@PHONE_SETUP.register("write")
def turn_airplane_mode_on(s: Session) -> str:
    """Airplane mode on (toggled, and toggled again when it was on already)."""
    if not _airplane(s):
        _airplane(s)
    return "ok"


@PHONE_SETUP.register("write")
def turn_airplane_mode_off(s: Session) -> str:
    """Airplane mode off (toggled, and toggled again when it was off already)."""
    if _airplane(s):
        _airplane(s)
    return "ok"


@PHONE_SETUP.register("write")
def unseat_sim_card(s: Session) -> str:
    """The SIM card is missing."""
    s.edit("device", PHONE).sim_card_missing = True
    network_search(s)
    return "ok"


@PHONE_SETUP.register("write")
def lock_sim_card(s: Session, mode: Literal["pin", "puk"]) -> str:
    """The SIM card is locked.

    Args:
        mode: 'pin' or 'puk'.
    """
    s.edit("device", PHONE).sim_card_status = "locked_pin" if mode == "pin" else "locked_puk"
    network_search(s)
    return "ok"


@PHONE_SETUP.register("write")
def break_apn_settings(s: Session) -> str:
    """The APN is broken (no service)."""
    d = s.edit("device", PHONE)
    d.active_apn_settings = d.active_apn_settings.model_copy(update={"apn_name": "broken"})
    network_search(s)
    return "ok"


@PHONE_SETUP.register("write")
def break_apn_mms_setting(s: Session) -> str:
    """The MMSC URL is removed (no MMS)."""
    d = s.edit("device", PHONE)
    d.active_apn_settings = d.active_apn_settings.model_copy(update={"mmsc_url": None})
    return "ok"


@PHONE_SETUP.register("write")
def remove_app_permission(s: Session, app_name: str, permission: str) -> str:
    """An app loses a permission.

    Args:
        app_name: The app.
        permission: The permission.
    """
    permission = permission.lower()
    if app_name not in device(s).app_statuses or permission not in PERMISSIONS:
        raise ToolError(f"no permission '{permission}' on app '{app_name}'", "not_found")
    setattr(s.edit("device", PHONE).app_statuses[app_name].permissions, permission, False)
    return "ok"


@PHONE_SETUP.register("write")
def set_wifi_calling(s: Session, enabled: bool, mms_over_wifi: bool | None = None) -> str:
    """Wi-Fi calling (and MMS over Wi-Fi, when given).

    Args:
        enabled: Wi-Fi calling on.
        mms_over_wifi: MMS over Wi-Fi on.
    """
    d = s.edit("device", PHONE)
    d.wifi_calling_enabled = enabled
    if mms_over_wifi is not None:
        d.wifi_calling_mms_over_wifi = mms_over_wifi
    return "ok"


@PHONE_SETUP.register("write")
def break_vpn(s: Session) -> str:
    """A VPN with poor performance is connected (slow data)."""
    _connect_vpn(s)
    d = s.edit("device", PHONE)
    details = d.vpn_details or VpnDetails()
    d.vpn_details = details.model_copy(update={"server_performance": "poor"})
    return "ok"


@PHONE_SETUP.register("write")
def simulate_network_search(s: Session) -> str:
    """The phone searches for a network."""
    network_search(s)
    return "ok"


# ---- env assertions (phone side) ----------------------------------------------------------------------------------
def assert_service_status(s: Session, expected_status: str) -> bool:
    return device(s).network_connection_status == expected_status


def assert_mobile_data_status(s: Session, expected_status: bool) -> bool:
    return mobile_data_working(s) == expected_status


def assert_internet_speed(s: Session, expected_speed: float, expected_desc: str | None = None) -> bool:
    mbps, label = speed(s)
    fast = (mbps or 0.0) >= expected_speed
    return fast if expected_desc is None else fast and label.lower() == expected_desc.lower()


def assert_can_send_mms(s: Session, expected_status: bool = True) -> bool:
    return can_send_mms_now(s) == expected_status


def assert_airplane_mode_status(s: Session, expected_status: bool) -> bool:
    return device(s).airplane_mode == expected_status


def assert_mobile_roaming_status(s: Session, expected_status: bool) -> bool:
    return device(s).roaming_enabled == expected_status


def assert_mobile_data_saver_mode_status(s: Session, expected_status: bool) -> bool:
    return device(s).data_saver_mode == expected_status


PHONE_ASSERTIONS = {
    f.__name__: f
    for f in (
        assert_service_status,
        assert_mobile_data_status,
        assert_internet_speed,
        assert_can_send_mms,
        assert_airplane_mode_status,
        assert_mobile_roaming_status,
        assert_mobile_data_saver_mode_status,
    )
}
