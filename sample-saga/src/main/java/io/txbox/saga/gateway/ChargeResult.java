package io.txbox.saga.gateway;

/**
 * The gateway's answer to a charge.
 *
 * @param chargeId the gateway's id of the ledger entry
 * @param approved whether the card was charged; false means declined
 * @param replayed true when this key had been charged before and the stored answer came back
 */
public record ChargeResult(String chargeId, boolean approved, boolean replayed) {}
