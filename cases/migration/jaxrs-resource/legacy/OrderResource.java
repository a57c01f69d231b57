package com.acme.orders;

import java.util.List;

import javax.inject.Inject;
import javax.ws.rs.GET;
import javax.ws.rs.Path;
import javax.ws.rs.PathParam;
import javax.ws.rs.Produces;
import javax.ws.rs.core.MediaType;

@Path("/orders")
public class OrderResource {

    @Inject
    OrderService service;

    @GET
    @Path("/{customer}")
    @Produces(MediaType.APPLICATION_JSON)
    public List<Order> open(@PathParam("customer") String customer) {
        return service.openOrders(customer);
    }
}
