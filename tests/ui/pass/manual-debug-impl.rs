// An `impl Debug` written in the module replaces the derived one, to keep
// a secret out of logs: the macro does not derive a second. Whoever writes
// their own may also derive one under `cfg_attr` (never, here) for builds
// that leave theirs out. The impl may name the enum through `self::`.
#![deny(warnings)]

#[agent_fsm::state_machine(fallback = Wait)]
pub mod login {
    #[states]
    #[derive(PartialEq)]
    #[cfg_attr(any(), derive(Debug))]
    pub enum State {
        #[initial]
        Idle,
        Authed { token: String },
    }

    impl std::fmt::Debug for State {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Self::Idle => f.write_str("Idle"),
                Self::Authed { .. } => f.write_str("Authed { token: <redacted> }"),
            }
        }
    }

    #[events]
    pub enum Event {
        Login(String),
        Logout,
    }

    // Named through `self::`, still the module's own enum.
    impl core::fmt::Debug for self::Event {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str(self.name())
        }
    }

    #[actions]
    #[derive(Debug, PartialEq)]
    pub enum Action {
        Wait,
    }

    transitions! {
        Idle + Login(token) => Authed { token } / Wait,
        Authed + Logout => Idle / Wait,
    }
}

fn main() {
    let mut m = login::Machine::new();
    m.handle_event(login::Event::Login("s3cret".to_owned()));
    assert_eq!(format!("{:?}", m.state()), "Authed { token: <redacted> }");
    if let login::State::Authed { token } = m.state() {
        assert_eq!(token, "s3cret");
    }
    m.handle_event(login::Event::Logout);
    assert_eq!(format!("{:?}", login::Event::Login("s3cret".to_owned())), "Login");
}
