//! The simplest stage: passes every frame on (benchmarks, tests, padding).

use crate::frames::Frame;
use crate::stage::{Ctx, Direction, Stage};

/// Passes every frame on unchanged.
#[derive(Debug, Default, Clone, Copy)]
pub struct PassThrough;

impl Stage for PassThrough {
    fn name(&self) -> &'static str {
        "pass_through"
    }
    fn handle(&mut self, frame: Frame, dir: Direction, ctx: &mut Ctx<'_>) {
        ctx.pass(frame, dir);
    }
}
