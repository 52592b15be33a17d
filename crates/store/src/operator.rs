//! The operator's credentials: the argon2 hash of the dashboard password
//! (never the password itself).

use crate::{Store, StoreError};

impl Store {
    /// Keep `hash` (an argon2 PHC string) as the operator's password,
    /// replacing any earlier one.
    pub async fn set_operator_password_hash(
        &self,
        hash: &str,
        now_unix: f64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO operator_credentials (id, password_hash, set_unix) VALUES (1, $1, $2) \
             ON CONFLICT (id) DO UPDATE SET password_hash = excluded.password_hash, \
             set_unix = excluded.set_unix",
        )
        .bind(hash)
        .bind(now_unix)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The operator's password hash, if one was set.
    pub async fn operator_password_hash(&self) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT password_hash FROM operator_credentials WHERE id = 1")
                .fetch_optional(self.pool())
                .await?,
        )
    }
}
