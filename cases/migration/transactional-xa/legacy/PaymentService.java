package com.acme.billing;

import javax.enterprise.context.ApplicationScoped;
import javax.transaction.Transactional;
import javax.transaction.xa.XAException;

@ApplicationScoped
public class PaymentService {

    @Transactional
    public void pay(String invoice) throws XAException {
        if (invoice == null) {
            throw new XAException("no invoice");
        }
    }
}
