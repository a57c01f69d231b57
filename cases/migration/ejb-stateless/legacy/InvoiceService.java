package com.acme.billing;

import java.math.BigDecimal;

import javax.ejb.Stateless;
import javax.inject.Inject;

@Stateless
public class InvoiceService {

    @Inject
    TaxTable taxes;

    public BigDecimal gross(BigDecimal net, String country) {
        return net.add(net.multiply(taxes.rate(country)));
    }
}
