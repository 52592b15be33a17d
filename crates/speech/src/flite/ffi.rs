//! The few Flite C functions we call (`/usr/include/flite/flite.h`,
//! `cst_wave.h`, Debian `flite1-dev` 2.2). Flite's voice list is not
//! populated in Debian's build, so the voice is registered by hand.

use std::os::raw::{c_char, c_int, c_short};

/// `cst_wave`: Flite's synthesized audio.
#[repr(C)]
pub struct CstWave {
    pub kind: *const c_char,
    pub sample_rate: c_int,
    pub num_samples: c_int,
    pub num_channels: c_int,
    pub samples: *mut c_short,
}

/// An opaque `cst_voice`.
#[repr(C)]
pub struct CstVoice {
    _private: [u8; 0],
}

extern "C" {
    pub fn flite_init() -> c_int;
    pub fn register_cmu_us_slt(voxdir: *const c_char) -> *mut CstVoice;
    pub fn flite_text_to_wave(text: *const c_char, voice: *mut CstVoice) -> *mut CstWave;
    pub fn delete_wave(wave: *mut CstWave);
}
