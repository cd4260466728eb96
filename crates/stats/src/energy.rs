//! Energy–delay products: one number that rewards placements which are both
//! fast and frugal (Gonzalez & Horowitz 1996). The "to pin or not to pin"
//! seed shows why energy alone misleads: E-cores draw less power but run so
//! much longer that they can cost more joules.

use crate::StatsError;

/// EDP = energy × time (J·s). Smaller is better.
///
/// Errors when either input is negative or not finite (a missing RAPL
/// reading must be reported as unavailable, not turned into 0).
pub fn energy_delay_product(energy_joules: f64, seconds: f64) -> Result<f64, StatsError> {
    check(energy_joules, 0)?;
    check(seconds, 1)?;
    Ok(energy_joules * seconds)
}

/// ED²P = energy × time² (J·s²): weights speed more, for performance-first users.
pub fn energy_delay_squared_product(energy_joules: f64, seconds: f64) -> Result<f64, StatsError> {
    Ok(energy_delay_product(energy_joules, seconds)? * seconds)
}

fn check(value: f64, index: usize) -> Result<(), StatsError> {
    if !value.is_finite() {
        Err(StatsError::NonFinite { index, value })
    } else if value < 0.0 {
        Err(StatsError::NonPositive { index, value })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products() {
        assert_eq!(energy_delay_product(10.0, 2.0), Ok(20.0));
        assert_eq!(energy_delay_squared_product(10.0, 2.0), Ok(40.0));
        assert!(energy_delay_product(f64::NAN, 1.0).is_err());
        assert!(energy_delay_product(1.0, -1.0).is_err());
    }
}
