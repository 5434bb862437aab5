//! Interval arithmetic on numbers, and three-valued truth: the algebra an
//! expression is judged in when the numbers it reads are known only to lie
//! in ranges. Every operation returns a range that holds every value the
//! operation can take over its operands' ranges (computed bounds are
//! widened outward by one unit in the last place, so rounding never
//! narrows them); where no finite range can be given it returns `None`
//! and the caller reads "any number".

/// The numbers from `low` to `high`, both included; a bound may be infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub low: f64,
    pub high: f64,
}

/// A truth over ranges: true for every value in them, false for every
/// one, or unknown (some values make it true and some false, or the
/// algebra cannot tell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Truth {
    True,
    False,
    Unknown,
}

impl Truth {
    pub fn of(b: bool) -> Truth {
        if b { Truth::True } else { Truth::False }
    }

    pub fn known(self) -> Option<bool> {
        match self {
            Truth::True => Some(true),
            Truth::False => Some(false),
            Truth::Unknown => None,
        }
    }

    pub fn negation(self) -> Truth {
        match self {
            Truth::True => Truth::False,
            Truth::False => Truth::True,
            Truth::Unknown => Truth::Unknown,
        }
    }

    /// Kleene's `&&`: false if either is, true if both are.
    pub fn and(self, other: Truth) -> Truth {
        match (self, other) {
            (Truth::False, _) | (_, Truth::False) => Truth::False,
            (Truth::True, Truth::True) => Truth::True,
            _ => Truth::Unknown,
        }
    }

    /// Kleene's `||`: true if either is, false if both are.
    pub fn or(self, other: Truth) -> Truth {
        self.negation().and(other.negation()).negation()
    }
}

impl Range {
    pub fn point(x: f64) -> Range {
        Range { low: x, high: x }
    }

    /// `None` for a NaN bound or `low > high`: not a range of numbers.
    pub fn new(low: f64, high: f64) -> Option<Range> {
        (low <= high).then_some(Range { low, high })
    }

    pub fn is_point(self) -> bool {
        self.low == self.high
    }

    pub fn contains(self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }

    /// The smallest range holding every candidate, widened outward.
    fn hull(candidates: &[f64]) -> Option<Range> {
        if candidates.iter().any(|c| c.is_nan()) {
            return None;
        }
        let low = candidates.iter().copied().fold(f64::INFINITY, f64::min);
        let high = candidates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Range::new(low.next_down(), high.next_up())
    }

    pub fn negated(self) -> Range {
        Range { low: -self.high, high: -self.low }
    }

    pub fn plus(self, other: Range) -> Option<Range> {
        Range::hull(&[self.low + other.low, self.high + other.high])
    }

    pub fn minus(self, other: Range) -> Option<Range> {
        self.plus(other.negated())
    }

    pub fn times(self, other: Range) -> Option<Range> {
        // 0 × ∞ stands for 0 times a finite number however large: 0.
        let product = |a: f64, b: f64| if a == 0.0 || b == 0.0 { 0.0 } else { a * b };
        Range::hull(&[
            product(self.low, other.low),
            product(self.low, other.high),
            product(self.high, other.low),
            product(self.high, other.high),
        ])
    }

    /// `None` when the divisor's range holds 0: the quotient is unbounded.
    pub fn divided_by(self, other: Range) -> Option<Range> {
        if other.contains(0.0) {
            return None;
        }
        Range::hull(&[
            self.low / other.low,
            self.low / other.high,
            self.high / other.low,
            self.high / other.high,
        ])
    }

    /// Not monotone: the least absolute value is 0 when the range holds 0.
    pub fn abs(self) -> Range {
        if self.low >= 0.0 {
            self
        } else if self.high <= 0.0 {
            self.negated()
        } else {
            Range { low: 0.0, high: (-self.low).max(self.high) }
        }
    }

    pub fn min(self, other: Range) -> Range {
        Range { low: self.low.min(other.low), high: self.high.min(other.high) }
    }

    pub fn max(self, other: Range) -> Range {
        Range { low: self.low.max(other.low), high: self.high.max(other.high) }
    }

    pub fn less(self, other: Range) -> Truth {
        if self.high < other.low {
            Truth::True
        } else if self.low >= other.high {
            Truth::False
        } else {
            Truth::Unknown
        }
    }

    pub fn less_or_equal(self, other: Range) -> Truth {
        if self.high <= other.low {
            Truth::True
        } else if self.low > other.high {
            Truth::False
        } else {
            Truth::Unknown
        }
    }

    /// Equal throughout only when both are the same point.
    pub fn equals(self, other: Range) -> Truth {
        if self.is_point() && other.is_point() && self.low == other.low {
            Truth::True
        } else if self.high < other.low || other.high < self.low {
            Truth::False
        } else {
            Truth::Unknown
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(low: f64, high: f64) -> Range {
        Range { low, high }
    }

    /// Every value the operation takes on a grid over the operands'
    /// ranges lies in the range it returns.
    fn holds_every_value(
        operation: fn(Range, Range) -> Option<Range>,
        exact: fn(f64, f64) -> f64,
        a: Range,
        b: Range,
    ) {
        let Some(out) = operation(a, b) else { return };
        for i in 0..=20 {
            for j in 0..=20 {
                let x = a.low + (a.high - a.low) * f64::from(i) / 20.0;
                let y = b.low + (b.high - b.low) * f64::from(j) / 20.0;
                let v = exact(x, y);
                assert!(out.contains(v), "{x} op {y} = {v} outside {out:?} ({a:?}, {b:?})");
            }
        }
    }

    #[test]
    fn arithmetic_holds_every_value_of_its_operands() {
        let ranges = [r(-3.0, -1.0), r(-2.0, 5.0), r(0.0, 0.0), r(0.1, 0.3), r(2.0, 7.5), r(1e9, 1e9 + 1.0)];
        for &a in &ranges {
            for &b in &ranges {
                holds_every_value(Range::plus, |x, y| x + y, a, b);
                holds_every_value(Range::minus, |x, y| x - y, a, b);
                holds_every_value(Range::times, |x, y| x * y, a, b);
                holds_every_value(Range::divided_by, |x, y| x / y, a, b);
                holds_every_value(|a, _| Some(a.abs()), |x, _| x.abs(), a, b);
                holds_every_value(|a, b| Some(a.min(b)), f64::min, a, b);
                holds_every_value(|a, b| Some(a.max(b)), f64::max, a, b);
            }
        }
    }

    #[test]
    fn abs_of_a_range_across_zero_starts_at_zero() {
        assert_eq!(r(-0.2, 0.1).abs(), r(0.0, 0.2));
        assert_eq!(r(-0.2, -0.1).abs(), r(0.1, 0.2));
    }

    #[test]
    fn a_divisor_that_may_be_zero_gives_no_range() {
        assert_eq!(r(1.0, 2.0).divided_by(r(-1.0, 1.0)), None);
        assert_eq!(r(1.0, 2.0).divided_by(r(0.0, 1.0)), None);
        assert!(r(1.0, 2.0).divided_by(r(0.5, 1.0)).is_some());
    }

    #[test]
    fn unbounded_sides_stay_sound() {
        let above = r(2.0, f64::INFINITY);
        assert_eq!(r(0.0, 1.0).times(above).map(|p| p.low), Some(0.0_f64.next_down()));
        assert_eq!(above.less(r(1.0, 1.0)), Truth::False);
        assert_eq!(above.less(r(3.0, 3.0)), Truth::Unknown);
        // ∞ / ∞ has no value: the quotient is left unknown.
        assert_eq!(above.divided_by(above), None);
    }

    #[test]
    fn comparisons_are_known_only_when_the_ranges_do_not_overlap() {
        assert_eq!(r(1.0, 2.0).less(r(3.0, 4.0)), Truth::True);
        assert_eq!(r(3.0, 4.0).less(r(1.0, 3.0)), Truth::False);
        assert_eq!(r(1.0, 3.0).less(r(2.0, 4.0)), Truth::Unknown);
        assert_eq!(r(1.0, 2.0).less_or_equal(r(2.0, 4.0)), Truth::True);
        assert_eq!(r(1.0, 2.0).less(r(2.0, 4.0)), Truth::Unknown);
        assert_eq!(r(1.0, 1.0).equals(r(1.0, 1.0)), Truth::True);
        assert_eq!(r(1.0, 2.0).equals(r(1.5, 1.5)), Truth::Unknown);
        assert_eq!(r(1.0, 2.0).equals(r(3.0, 3.0)), Truth::False);
    }

    #[test]
    fn kleene_logic() {
        use Truth::*;
        assert_eq!(Unknown.and(False), False);
        assert_eq!(Unknown.and(True), Unknown);
        assert_eq!(Unknown.or(True), True);
        assert_eq!(Unknown.or(False), Unknown);
        assert_eq!(Unknown.negation(), Unknown);
    }
}
