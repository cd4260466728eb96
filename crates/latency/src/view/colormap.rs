//! One colour scale for the terminal and the charts, so a pair looks the
//! same in both: viridis (perceptually uniform, readable by colour-blind
//! people and in greyscale print), low latency dark, high latency bright.

/// Viridis at 0, ¼, ½, ¾, 1 (matplotlib's values); linear in between.
const ANCHORS: [(f64, [u8; 3]); 5] = [
    (0.0, [68, 1, 84]),
    (0.25, [59, 82, 139]),
    (0.5, [33, 145, 140]),
    (0.75, [94, 201, 98]),
    (1.0, [253, 231, 37]),
];

/// The colour of position `t` (clamped to 0..=1) on the scale.
pub fn viridis(t: f64) -> [u8; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    for w in ANCHORS.windows(2) {
        let ((t0, c0), (t1, c1)) = (w[0], w[1]);
        if t <= t1 {
            let f = (t - t0) / (t1 - t0);
            let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
            return [mix(c0[0], c1[0]), mix(c0[1], c1[1]), mix(c0[2], c1[2])];
        }
    }
    ANCHORS[4].1
}

/// Where `v` falls between `lo` and `hi` (0.0 when they are equal).
pub fn position(v: f64, lo: f64, hi: f64) -> f64 {
    if hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Whether black text is more readable than white on `rgb` (WCAG relative
/// luminance, threshold where the two contrasts are equal).
pub fn prefers_dark_text(rgb: [u8; 3]) -> bool {
    let lin = |c: u8| {
        let c = c as f64 / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
    l > 0.179
}

/// The nearest colour of the xterm 256-colour cube (16..=231).
pub fn ansi256(rgb: [u8; 3]) -> u8 {
    // The cube's levels are 0, 95, 135, 175, 215, 255.
    let level = |c: u8| -> u8 {
        const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
        (0..6u8)
            .min_by_key(|&i| (LEVELS[i as usize] as i32 - c as i32).abs())
            .unwrap()
    };
    16 + 36 * level(rgb[0]) + 6 * level(rgb[1]) + level(rgb[2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_and_middle_of_the_scale() {
        assert_eq!(viridis(0.0), [68, 1, 84]);
        assert_eq!(viridis(1.0), [253, 231, 37]);
        assert_eq!(viridis(0.5), [33, 145, 140]);
        assert_eq!(viridis(-3.0), viridis(0.0));
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        assert_eq!(position(5.0, 5.0, 5.0), 0.0);
        assert_eq!(position(7.5, 5.0, 10.0), 0.5);
    }

    #[test]
    fn text_contrast_and_terminal_colours() {
        assert!(!prefers_dark_text(viridis(0.0)));
        assert!(prefers_dark_text(viridis(1.0)));
        assert_eq!(ansi256([0, 0, 0]), 16);
        assert_eq!(ansi256([255, 255, 255]), 231);
        assert_eq!(ansi256([253, 231, 37]), 16 + 36 * 5 + 6 * 4);
    }
}
