//! A cell's document body: the cell exactly as the load generator runs it.

use anvil_loadgen::{Balance, CellSpec};
use serde::{Deserialize, Serialize};

/// What running a cell needs besides its server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellExec {
    /// Every default applied, file paths made absolute on the planning machine.
    pub cell: CellSpec,
    /// How requests are spread over the server's replicas.
    pub balance: Balance,
    /// The campaign seed its requests are drawn under.
    pub seed: u64,
    /// The fingerprint of its server's document.
    pub server: String,
    /// The recipe it was planned from, as its artifact names it (a label:
    /// the recipe is not read).
    pub recipe: String,
}
