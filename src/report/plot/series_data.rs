//! The points a line or scatter plot draws, shared by the plot families.

/// A named set of points: a line, or a scatter series.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}
