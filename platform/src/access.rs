//! What a call may need: sub-user rights, panel permissions and plan features.

use std::fmt;

macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The name used in requests, responses and the store.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// Parses the name used in requests and the store.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

named_enum!(
    /// A right a security group grants its sub-users; master users hold all of them.
    Right {
        /// Create and change vehicles, garages.
        VehicleUpdate = "vehicle_update",
        /// Create and change employees, departments.
        EmployeeUpdate = "employee_update",
        /// Create bills.
        PaymentCreate = "payment_create",
        /// Create geo links (shared live-location sessions).
        WeblocatorSessionCreate = "weblocator_session_create",
        /// Account administration: sub-users, retranslators; master users only.
        Admin = "admin",
    }
);

named_enum!(
    /// A feature a tracker's plan may include.
    Feature {
        /// Sub-users (multi-level access).
        MultilevelAccess = "multilevel_access",
        /// Geo links (the weblocator).
        Weblocator = "weblocator",
    }
);

named_enum!(
    /// A dealer panel permission, written `<group>:<permission>`.
    Permission {
        /// `base: get_dealer_info`.
        BaseGetDealerInfo = "base:get_dealer_info",
        /// `service_settings: read`.
        ServiceSettingsRead = "service_settings:read",
        /// `service_settings: update`.
        ServiceSettingsUpdate = "service_settings:update",
        /// `notification_settings: read`.
        NotificationSettingsRead = "notification_settings:read",
        /// `notification_settings: update`.
        NotificationSettingsUpdate = "notification_settings:update",
        /// `trackers: corrupt`.
        TrackersCorrupt = "trackers:corrupt",
        /// `trackers: create`.
        TrackersCreate = "trackers:create",
        /// `trackers: delete`.
        TrackersDelete = "trackers:delete",
        /// `trackers: global`.
        TrackersGlobal = "trackers:global",
        /// `trackers: read`.
        TrackersRead = "trackers:read",
        /// `trackers: report`.
        TrackersReport = "trackers:report",
        /// `trackers: update`.
        TrackersUpdate = "trackers:update",
        /// `users: corrupt`.
        UsersCorrupt = "users:corrupt",
        /// `users: create`.
        UsersCreate = "users:create",
        /// `users: global`.
        UsersGlobal = "users:global",
        /// `users: read`.
        UsersRead = "users:read",
        /// `users: update`.
        UsersUpdate = "users:update",
        /// `user_sessions: create`.
        UserSessionsCreate = "user_sessions:create",
        /// `tariffs: create`.
        TariffsCreate = "tariffs:create",
        /// `tariffs: read`.
        TariffsRead = "tariffs:read",
        /// `tariffs: update`.
        TariffsUpdate = "tariffs:update",
        /// `transactions: create`.
        TransactionsCreate = "transactions:create",
        /// `transactions: read`.
        TransactionsRead = "transactions:read",
        /// `activation_code: create`.
        ActivationCodeCreate = "activation_code:create",
        /// `activation_code: read`.
        ActivationCodeRead = "activation_code:read",
        /// `activation_code: update`.
        ActivationCodeUpdate = "activation_code:update",
        /// `password: update`.
        PasswordUpdate = "password:update",
        /// `email_gateways: create`.
        EmailGatewaysCreate = "email_gateways:create",
        /// `email_gateways: delete`.
        EmailGatewaysDelete = "email_gateways:delete",
        /// `email_gateways: read`.
        EmailGatewaysRead = "email_gateways:read",
        /// `email_gateways: send_email`.
        EmailGatewaysSendEmail = "email_gateways:send_email",
        /// `email_gateways: update`.
        EmailGatewaysUpdate = "email_gateways:update",
        /// `subpaas: create`.
        SubpaasCreate = "subpaas:create",
        /// `subpaas: delete`.
        SubpaasDelete = "subpaas:delete",
        /// `subpaas: read`.
        SubpaasRead = "subpaas:read",
        /// `subpaas: update`.
        SubpaasUpdate = "subpaas:update",
        /// `tracker_bundles: read`.
        TrackerBundlesRead = "tracker_bundles:read",
    }
);

impl Permission {
    /// The group half of the name (`base` of `base:get_dealer_info`).
    pub fn group(self) -> &'static str {
        self.as_str().split_once(':').map_or("", |(group, _)| group)
    }

    /// The permission half of the name (`get_dealer_info`).
    pub fn name(self) -> &'static str {
        self.as_str().split_once(':').map_or("", |(_, name)| name)
    }

    /// Parses `group:name`, also accepting `group: name` as the spec writes it.
    pub fn parse_lenient(text: &str) -> Option<Self> {
        let (group, name) = text.split_once(':')?;
        Self::parse(&format!("{}:{}", group.trim(), name.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_names_split_into_group_and_name() {
        assert_eq!(Permission::BaseGetDealerInfo.group(), "base");
        assert_eq!(Permission::BaseGetDealerInfo.name(), "get_dealer_info");
        assert_eq!(
            Permission::parse_lenient("users: read"),
            Some(Permission::UsersRead)
        );
        assert_eq!(Permission::parse_lenient("users:fly"), None);
        assert!(
            Permission::ALL
                .iter()
                .all(|p| !p.group().is_empty() && !p.name().is_empty())
        );
    }

    #[test]
    fn names_round_trip() {
        for r in Right::ALL {
            assert_eq!(Right::parse(r.as_str()), Some(*r));
        }
        for f in Feature::ALL {
            assert_eq!(Feature::parse(f.as_str()), Some(*f));
        }
    }
}
