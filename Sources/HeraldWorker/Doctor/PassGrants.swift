/// What a pass touches in the database, and so what its role must be granted: the tables with the
/// privileges its statements need (generators, claims, records, housekeeping, the truth phases), and the
/// functions it calls. `herald doctor` checks each (`database.grants`); a table the schema does not have
/// yet is `database.schema`'s to report.
enum PassGrants {
    /// A table privilege, as `has_table_privilege` names it.
    enum Privilege: String, Sendable, CaseIterable {
        case select, insert, update, delete
    }

    static let tables: [(table: String, privileges: [Privilege])] = [
        ("notification_queue", [.select, .insert, .update, .delete]),
        ("notification_deliveries", [.select, .insert, .update]),
        ("notification_events", [.select, .insert]),
        ("herald_passes", [.select, .insert, .update]),
        ("herald_lease_holders", [.select, .insert, .update, .delete]),
        ("herald_pauses", [.select]),
        ("herald_provider_credentials", [.select, .insert, .update, .delete]),
        ("inbox", [.select, .insert, .update, .delete]),
        ("user_profiles", [.select, .update]),
        ("device_tokens", [.select, .update]),
        ("herald_device_limits", [.select]),
        ("family_members", [.select]),
        ("wearable_daily_metrics", [.select]),
        ("pattern_thresholds", [.select]),
        ("pattern_alert_state", [.select, .insert, .update]),
        ("pattern_evaluations", [.select, .insert, .update]),
        ("pattern_scan_state", [.select, .update]),
        ("daily_forecasts", [.select, .insert, .update]),
        ("forecast_misses", [.select, .insert, .delete]),
        ("prompt_settings", [.select]),
        ("prompt_schedules", [.select, .insert, .update]),
        ("reminders", [.select, .update]),
        ("daily_logs", [.select]),
        ("dose_events", [.select]),
        ("push_receipts", [.select, .insert, .update]),
        ("provider_events", [.select, .update, .delete]),
        ("schema_migrations", [.select]),
    ]

    /// The functions a pass calls (switching channels off, the audit trail's partitions, the queue's,
    /// a day's prompts planned again).
    static let functions = [
        "herald_switch_off_channels", "herald_audit_partitions", "herald_audit_drop_before", "herald_queue_partitions",
        "herald_unread_entries",
        "herald_prompt_keys", "herald_withdraw_prompt_rows",
    ]
}
