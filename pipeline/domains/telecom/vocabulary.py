"""Telecom's words for the failure-mode rules: the troubleshooting workflow, as the phone shows it.

A refuel of 1 or 2 GB is the policy's (at most 2 GB at a time), a pick from it rather than a figure to invent.

`workflow_steps`: what the customer's phone can show that the technical-support workflow fixes with one step of
theirs (airplane mode on: turn it off; the SIM missing: reseat it; a broken APN or one without its MMS server:
reset it, then reboot; mobile data off; Data Saver on; a VPN connected; Wi-Fi Calling on, for MMS; the messaging
app without its SMS or storage permission). Data roaming off is a problem only abroad and a network mode only for
some goals, so neither is read as a step the workflow always requires.
`harmful_changes`: a change the customer made that leaves the phone worse for every goal (airplane mode on,
mobile data or roaming off, Data Saver on, a 2G or 3G network mode).
"""

from __future__ import annotations

from pipeline.world import Vocabulary

WORKFLOW_STEPS = {
    r"Airplane Mode: ON": "toggle_airplane_mode",
    r"SIM Card Status: missing": "reseat_sim_card",
    r"APN Name: broken|MMSC URL \(for picture messages\): Not Set": "reset_apn_settings",
    r"APN settings will reset at reboot": "reboot_device",
    r"Mobile Data Enabled: No": "toggle_data",
    r"Data Saver mode is ON": "toggle_data_saver_mode",
    r"VPN is ON and connected": "disconnect_vpn",
    r"Wi-Fi Calling is currently turned ON": "toggle_wifi_calling",
    r"App 'messaging' (currently has no permissions granted|has permission for: (?![^\n]*\bsms\b)"
    r"|has permission for: (?![^\n]*\bstorage\b))": "grant_app_permission",
}
HARMFUL_CHANGES = (
    r"Airplane Mode is now ON",
    r"Mobile Data is now OFF",
    r"Data Roaming is now OFF",
    r"Data Saver Mode is now ON",
    r"Preferred Network Mode set to: (2g_only|3g_only)",
)

VOCABULARY = Vocabulary(
    choices={"gb_amount": frozenset({"2.0", "2", "1.0", "1"})},  # the policy's refuel: at most 2 GB at a time
    lookup_groups={
        "get_customer_by_phone": "customer",
        "get_customer_by_id": "customer",
        "get_customer_by_name": "customer",
    },
    workflow_steps=WORKFLOW_STEPS,
    harmful_changes=HARMFUL_CHANGES,
)
