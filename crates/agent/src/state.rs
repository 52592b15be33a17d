//! The 16 call states, their categories, the transition table and the tools
//! each state may use (SPEC §1.1–§1.3, DECISIONS D-7/D-8).
//!
//! Unlike the reference, the transition table is *enforced*: the state
//! machine refuses (and debug builds panic on) any move that is neither in
//! the table nor the turn-limit escalation to `callback`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One state of a call.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum State {
    #[default]
    Welcome,
    NonService,
    Lookup,
    FollowUp,
    ManageBooking,
    Safety,
    SafetyExit,
    ServiceArea,
    Discovery,
    Urgency,
    UrgencyCallback,
    PreConfirm,
    Booking,
    BookingFailed,
    Confirm,
    Callback,
}

/// The category of a state (SPEC §1.1). Three states belong to none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Decision,
    Action,
    Terminal,
}

/// A backend tool (plus the `end_call` pseudo-tool in [`State::tools`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    LookupCaller,
    BookService,
    CreateCallback,
    SendSalesLeadAlert,
    ManageAppointment,
    EndCall,
}

impl Tool {
    /// The five backend tools (excluding the `end_call` pseudo-tool).
    pub const BACKEND: [Tool; 5] = [
        Tool::LookupCaller,
        Tool::BookService,
        Tool::CreateCallback,
        Tool::SendSalesLeadAlert,
        Tool::ManageAppointment,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Tool::LookupCaller => "lookup_caller",
            Tool::BookService => "book_service",
            Tool::CreateCallback => "create_callback",
            Tool::SendSalesLeadAlert => "send_sales_lead_alert",
            Tool::ManageAppointment => "manage_appointment",
            Tool::EndCall => "end_call",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Tool {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "lookup_caller" => Tool::LookupCaller,
            "book_service" => Tool::BookService,
            "create_callback" => Tool::CreateCallback,
            "send_sales_lead_alert" => Tool::SendSalesLeadAlert,
            "manage_appointment" => Tool::ManageAppointment,
            "end_call" => Tool::EndCall,
            _ => return Err(UnknownName(s.to_string())),
        })
    }
}

/// A name that is not a known state or tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown name: {0:?}")]
pub struct UnknownName(pub String);

impl State {
    pub const ALL: [State; 16] = [
        State::Welcome,
        State::NonService,
        State::Lookup,
        State::FollowUp,
        State::ManageBooking,
        State::Safety,
        State::SafetyExit,
        State::ServiceArea,
        State::Discovery,
        State::Urgency,
        State::UrgencyCallback,
        State::PreConfirm,
        State::Booking,
        State::BookingFailed,
        State::Confirm,
        State::Callback,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Welcome => "welcome",
            State::NonService => "non_service",
            State::Lookup => "lookup",
            State::FollowUp => "follow_up",
            State::ManageBooking => "manage_booking",
            State::Safety => "safety",
            State::SafetyExit => "safety_exit",
            State::ServiceArea => "service_area",
            State::Discovery => "discovery",
            State::Urgency => "urgency",
            State::UrgencyCallback => "urgency_callback",
            State::PreConfirm => "pre_confirm",
            State::Booking => "booking",
            State::BookingFailed => "booking_failed",
            State::Confirm => "confirm",
            State::Callback => "callback",
        }
    }

    pub fn category(self) -> Option<Category> {
        use State::*;
        match self {
            Welcome | Safety | ServiceArea | Discovery | Urgency | PreConfirm => {
                Some(Category::Decision)
            }
            Lookup | Booking => Some(Category::Action),
            SafetyExit | Confirm | Callback | BookingFailed | UrgencyCallback => {
                Some(Category::Terminal)
            }
            NonService | FollowUp | ManageBooking => None,
        }
    }

    pub fn is_terminal(self) -> bool {
        self.category() == Some(Category::Terminal)
    }

    /// States with a canned terminal script (callback, booking_failed, safety_exit).
    pub fn has_canned_script(self) -> bool {
        matches!(
            self,
            State::Callback | State::BookingFailed | State::SafetyExit
        )
    }

    /// States after which background field extraction runs (SPEC §5.8).
    pub fn runs_extraction(self) -> bool {
        matches!(
            self,
            State::ServiceArea | State::Discovery | State::Urgency | State::PreConfirm
        )
    }

    /// States whose entry promises the caller a call back (D-4).
    pub fn promises_callback(self) -> bool {
        matches!(
            self,
            State::Callback | State::BookingFailed | State::UrgencyCallback
        )
    }

    /// Allowed next states (SPEC §1.2). The turn-limit escalation to
    /// `callback` is allowed from every state in addition to these.
    pub fn allowed_next(self) -> &'static [State] {
        use State::*;
        match self {
            Welcome => &[Lookup, NonService, Callback],
            NonService => &[Safety, Callback],
            Lookup => &[Safety, FollowUp, ManageBooking, Callback],
            FollowUp => &[Safety, Callback],
            ManageBooking => &[Confirm, Safety, Callback],
            Safety => &[ServiceArea, SafetyExit],
            SafetyExit => &[],
            ServiceArea => &[Discovery, Callback],
            Discovery => &[Urgency],
            Urgency => &[PreConfirm, UrgencyCallback, Callback],
            UrgencyCallback => &[],
            PreConfirm => &[Booking, Callback],
            Booking => &[Confirm, BookingFailed],
            BookingFailed => &[],
            Confirm => &[],
            Callback => &[],
        }
    }

    pub fn can_move_to(self, to: State) -> bool {
        self.allowed_next().contains(&to)
    }

    /// Tools the state may use (SPEC §1.3 as amended by D-7/D-8);
    /// `end_call` appears as a pseudo-tool.
    pub fn tools(self) -> &'static [Tool] {
        use State::*;
        use Tool::*;
        match self {
            Welcome | Safety | Discovery | Urgency | PreConfirm => &[],
            NonService | FollowUp | BookingFailed => &[CreateCallback, EndCall],
            Lookup => &[LookupCaller],
            ManageBooking => &[ManageAppointment, EndCall],
            SafetyExit | ServiceArea | Confirm => &[EndCall],
            UrgencyCallback | Callback => &[CreateCallback, SendSalesLeadAlert, EndCall],
            Booking => &[BookService],
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for State {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        State::ALL
            .iter()
            .copied()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownName(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in State::ALL {
            assert_eq!(s.as_str().parse::<State>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s));
        }
        assert!("nowhere".parse::<State>().is_err());
    }

    #[test]
    fn terminal_states_have_no_exits() {
        for s in State::ALL {
            if s.is_terminal() {
                assert!(s.allowed_next().is_empty(), "{s}");
            }
        }
    }

    #[test]
    fn no_backward_transition_along_the_happy_path() {
        let path = [
            State::Welcome,
            State::Lookup,
            State::Safety,
            State::ServiceArea,
            State::Discovery,
            State::Urgency,
            State::PreConfirm,
            State::Booking,
            State::Confirm,
        ];
        for (i, from) in path.iter().enumerate() {
            for earlier in &path[..i] {
                assert!(!from.can_move_to(*earlier), "{from} -> {earlier}");
            }
        }
    }

    #[test]
    fn booking_cannot_end_the_call() {
        assert!(!State::Booking.tools().contains(&Tool::EndCall));
    }
}
