//! (scenarios being written)

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod e2e;

fn main() {
    e2e::main(vec![]);
}
