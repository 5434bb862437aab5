//! The Pareto front of points that trade one axis against another: the
//! cells' throughput against TTFT, and agent cells' tasks per minute
//! against task latency.

/// Indices of the points no other point beats on both: higher x, lower y.
pub(super) fn pareto(points: &[(f64, f64, &str)]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            let (x, y, _) = points[i];
            !points.iter().any(|&(ox, oy, _)| ox >= x && oy <= y && (ox > x || oy < y))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pareto_keeps_the_undominated() {
        let points = [(10.0, 5.0, "a"), (20.0, 6.0, "b"), (15.0, 7.0, "c"), (5.0, 4.0, "d")];
        assert_eq!(pareto(&points), vec![0, 1, 3]);
    }
}
